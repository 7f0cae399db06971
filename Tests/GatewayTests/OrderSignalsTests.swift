// SPDX-License-Identifier: Apache-2.0
import Gateway
import Testing

struct OrderSignalsTests {
    @Test func aWakeBetweenReadingTheStateAndWaitingIsNotLost() async {
        let signals = OrderSignals()
        let token = signals.token()      // the waiter reads the order's state after this…
        signals.wake("order-1")          // …a notify settles it before the waiter starts waiting…
        let started = ContinuousClock.now
        #expect(await signals.wait(for: "order-1", since: token, seconds: 20))  // …and the wait ends at once.
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(signals.openWaits == 0)
    }

    @Test func aWakeOfAnotherOrderOrBeforeTheTokenDoesNotEndTheWait() async {
        let signals = OrderSignals()
        signals.wake("order-1")
        let token = signals.token()
        signals.wake("order-2")
        #expect(await signals.wait(for: "order-1", since: token, seconds: 0.2) == false)
    }

    @Test func aWaiterIsWokenByALaterWake() async {
        let signals = OrderSignals()
        let token = signals.token()
        async let woken = signals.wait(for: "order-3", since: token, seconds: 20)
        try? await Task.sleep(for: .milliseconds(100))
        signals.wake("order-3")
        #expect(await woken)
    }
}
