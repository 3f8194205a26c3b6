//go:build race

package delivery_test

// raceChecks is TestDeliveryModel's budget under the race detector, which
// makes each check several times slower.
const raceChecks = "30"
