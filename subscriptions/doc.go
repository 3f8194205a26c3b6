// Package subscriptions is the domain of mcpe-server: events, filters,
// subscriptions, the matching index, the Store interface and the Service that
// ties them together. It imports no other package of the project except clock;
// delivery channels, stores, tools and adapters all depend on it.
//
// An event travels like this: Service.Publish validates it, asks the Index
// which subscriptions want it, writes the event and one inbox entry per
// matching subscription in a single Store transaction, and only then hands the
// entries to the delivery channel (realtime: an events/event notification on
// every live session of the owner). Nothing is routed that was not stored
// first, and nothing downstream can slow the publisher down.
package subscriptions
