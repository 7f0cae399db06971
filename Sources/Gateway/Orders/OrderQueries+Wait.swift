// SPDX-License-Identifier: Apache-2.0
import Foundation
import Lifecycle
import Observability
import StorageCore
import Synchronization

/// `GET /v1/orders/{id}?wait=N`: the order, waiting up to N seconds for a final state. WeChat is
/// asked at once and then every poll interval (one orderquery per order however many wait), a
/// notify meanwhile answers at once, and the deadline answers with the latest state even when
/// orderquery fails or hangs.
///
/// A held wait is data, not a task: the order number, the deadline, the last state read and the
/// callback that answers, parked in `OrderSignals` until a wake, the next poll or the deadline.
/// Each of those runs a short recheck (read, then answer or park again). A task per wait kept the
/// memory of its deepest chain of async calls for its whole life, plus a timer task: about 13 KB
/// of the 19.5 KB each of 10,000 held waits cost (BENCHMARKS.md, Gateway).
///
/// The reads and rechecks go through `queryWork`, a few at a time, rather than a task each: a
/// burst of 10,000 queries (or 10,000 waits timing out together) would otherwise be 10,000 tasks
/// alive at once, queued on the store's two reader threads, and that peak stays in the heap.
extension OrderQueries {
    /// What a query answers: the order's JSON, or the error to answer instead.
    public typealias OrderAnswer = Result<[UInt8], APIError>

    /// Reads the order and answers through `answer`, exactly once: at once when there is no wait,
    /// the order is final or the read fails; otherwise when it becomes final or `wait` seconds
    /// pass. Returns at once; nothing waits in the caller.
    ///
    /// `answer` may run on any thread (a waker's, the deadline timer's, a worker task's); it must
    /// be quick and must not block.
    ///
    /// With `owner` (an app token's user), another user's order is `order_not_found`, and a wait
    /// beyond the user's open-wait limit is `rate_limited`. `cancellation` ends the wait early,
    /// answering the order as it stands.
    public func order(_ outTradeNo: String, wait: Double, owner: String? = nil, cancellation: CancellationLatch? = nil,
                      answer: @escaping @Sendable (OrderAnswer) -> Void) {
        queryWork.reads.submit { [self] in
            await self.start(outTradeNo, wait: wait, owner: owner, cancellation: cancellation, answer: answer)
        }
    }

    private func start(_ outTradeNo: String, wait: Double, owner: String?, cancellation: CancellationLatch?,
                       answer: @escaping @Sendable (OrderAnswer) -> Void) async {
        // Taken before the read, so a notify settling between the read and the wait still wakes it.
        let token = signals.token()
        let found: OrderRecord?
        do {
            found = try await storage { () throws(StorageError) in try await self.store.order(outTradeNo) }
        } catch {
            return answer(.failure(error))
        }
        guard let order = found, Self.isVisible(order, to: owner) else { return answer(.failure(.orderNotFound)) }
        guard wait > 0, !order.state.isFinal else { return answer(await self.answer(for: order)) }
        let deadline = ContinuousClock.now + .seconds(wait)
        var reservation: WaitReservation?
        if let owner {
            switch userLimits.reserveWait(owner, until: deadline) {
            case .success(let reserved): reservation = reserved
            case .failure(let limited):
                instruments.waitsLimited.increment()
                return answer(.failure(limited))
            }
        }
        instruments.waitsOpen.add(1)
        hold(HeldWait(outTradeNo: outTradeNo, deadline: deadline, reservation: reservation, cancellation: cancellation,
                      answer: answer), order, since: token)
    }

    /// The order, optionally waiting up to `wait` seconds for it to become final (see
    /// `order(_:wait:answer:)`); the calling task waits for the answer, and cancelling it ends
    /// the wait with the order as it stands.
    public func order(_ outTradeNo: String, wait: Double = 0, owner: String? = nil) async throws(APIError) -> [UInt8] {
        let slot = AnswerSlot()
        let cancellation = CancellationLatch()
        return try await withTaskCancellationHandler {
            order(outTradeNo, wait: wait, owner: owner, cancellation: cancellation, answer: slot.fill)
            return await slot.value
        } onCancel: {
            cancellation.cancel()
        }.get()
    }

    /// Asks WeChat if a poll is due, then parks until the order is woken, the next poll is due or
    /// the deadline passes.
    private func hold(_ held: HeldWait, _ order: OrderRecord, since token: UInt64) {
        let remaining = held.deadline - .now
        guard remaining > .zero else { return queryWork.rechecks.submit { [self] in await self.finish(held, order) } }
        // Ask WeChat unless someone did within the poll interval; the query runs detached (and at
        // most 64 at a time), so a hanging WeChat never holds this answer past its deadline.
        let outTradeNo = held.outTradeNo
        let nextPoll = upstream.scheduleQuery(outTradeNo, interval: configuration.pollInterval) { [self] in
            await self.poll(outTradeNo)
        }
        let sleep = min(remaining, nextPoll)
        let seconds = Double(sleep.components.seconds) + Double(sleep.components.attoseconds) * 1e-18
        let ticket = signals.park(outTradeNo, since: token, seconds: max(0.001, seconds)) { [self] _ in
            // On a waker's thread or the timer's: the store read belongs in a task.
            queryWork.rechecks.submit { await self.recheck(held, order) }
        }
        // A cancellation ends the parking at once, and the recheck that follows answers.
        if let ticket, let cancellation = held.cancellation {
            cancellation.whenCancelled { [signals] in signals.cancel(ticket) }
        }
    }

    /// Woken, or a poll or the deadline is due: answers when the order is final or time is up,
    /// else holds it again. A failed read keeps the state read before.
    private func recheck(_ held: HeldWait, _ previous: OrderRecord) async {
        let token = signals.token()
        let order = (try? await store.order(held.outTradeNo)) ?? previous
        if order.state.isFinal || held.deadline <= .now || held.cancellation?.isCancelled == true {
            await finish(held, order)
        } else {
            hold(held, order, since: token)
        }
    }

    private func finish(_ held: HeldWait, _ order: OrderRecord) async {
        instruments.waitsOpen.add(-1)
        let ended =
            if order.state.isFinal { instruments.waitEndedFinal }
            else if held.deadline > .now, held.cancellation?.isCancelled == true { instruments.waitCancelled }
            else { instruments.waitRanOut }
        ended.record(ContinuousClock.now - held.started)
        held.reservation?.release()
        held.answer(await answer(for: order))
    }

    /// The order as the API shows it (a paid one with its refunds), or the error to answer.
    private func answer(for order: OrderRecord) async -> OrderAnswer {
        do {
            return .success(try await viewJSON(order))
        } catch {
            return .failure(error)
        }
    }
}

/// One held `wait`: what answering it later needs, and nothing more.
private struct HeldWait: Sendable {
    let outTradeNo: String
    let deadline: ContinuousClock.Instant
    /// When the wait was parked: its answer's latency is the dashboard's "wait latency".
    let started = ContinuousClock.now
    /// An app user's open-wait slot, given back when the wait answers.
    let reservation: WaitReservation?
    /// Ends the wait early with the order as it stands: its client left, the gateway is shutting
    /// down (`HTTPServerResponder.onCancel`), or the task awaiting it was cancelled; before the
    /// wait is held (it then answers at its first hold) or while it is parked.
    let cancellation: CancellationLatch?
    let answer: @Sendable (OrderQueries.OrderAnswer) -> Void
}

/// Bridges a callback answer to the task that awaits it; filled once, possibly before it is awaited.
private final class AnswerSlot: Sendable {
    private let state = Mutex<(answer: OrderQueries.OrderAnswer?, waiter: CheckedContinuation<OrderQueries.OrderAnswer, Never>?)>(
        (nil, nil))

    @Sendable func fill(_ answer: OrderQueries.OrderAnswer) {
        let waiter = state.withLock { state -> CheckedContinuation<OrderQueries.OrderAnswer, Never>? in
            guard state.answer == nil else { return nil }
            state.answer = answer
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: answer)
    }

    var value: OrderQueries.OrderAnswer {
        get async {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> OrderQueries.OrderAnswer? in
                    if let answer = state.answer { return answer }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}

/// Where the short pieces of order queries run, each queue at most 16 at a time: more would only
/// queue on the store's reader threads, holding a task each meanwhile.
struct OrderQueryWork: Sendable {
    /// The first read of every query.
    let reads = BoundedWork(width: 16)
    /// Held waits' rechecks on a wake, a poll or the deadline; apart from `reads`, so a plain
    /// query does not queue behind 10,000 waits timing out together.
    let rechecks = BoundedWork(width: 16)
}
