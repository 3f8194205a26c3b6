// Package subscriptions is the domain of mcpe-server: the subscription as
// the server keeps it, filters compiled into matchers, the matching index,
// the Service that creates, changes and routes, quotas and retention, and the
// Store contract every backend implements (subscriptions/sqlite and
// subscriptions/postgres; the contract suite is subscriptions/storetest). The wire shapes it works with (events,
// filters, deliveries, handler settings, tool arguments) are those of package
// mcpe; it imports no other package of the project except clock.
//
// An event travels like this: Service.Publish validates it, asks the Index
// which subscriptions want it, writes the event and one inbox entry per
// matching subscription in a single Store transaction, and only then hands the
// entries to the Deliverer (delivery/realtime: an events/event notification
// on every live session of the owner). Nothing is routed that was not stored
// first, and nothing downstream can slow the publisher down.
package subscriptions
