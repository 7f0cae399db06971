// SPDX-License-Identifier: Apache-2.0
import Glibc
import Lifecycle
import Observability
import Synchronization
import Testing
import TestSupport

/// What the services of a test did, in the order they did it.
final class Journal: Sendable {
    private let lines = Mutex<[String]>([])
    func write(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
    func contains(_ line: String) -> Bool { all.contains(line) }
}

/// Runs until its graceful shutdown, then takes `windDown` to stop (writing "stop NAME" last), as
/// a server draining its requests would.
struct Graceful: Service, CustomStringConvertible {
    let name: String
    let journal: Journal
    var windDown: Duration = .milliseconds(50)
    var description: String { name }

    func run() async throws {
        journal.write("start \(name)")
        do {
            try await gracefulShutdown()
        } catch {
            journal.write("cancelled \(name)")
            throw error
        }
        journal.write("told \(name)")
        try? await Task.sleep(for: windDown)
        journal.write("stop \(name)")
    }
}

/// Pays no attention to graceful shutdown: stops only when cancelled.
struct Stubborn: Service, CustomStringConvertible {
    let name: String
    let journal: Journal
    var description: String { name }

    func run() async throws {
        journal.write("start \(name)")
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
        journal.write("cancelled \(name)")
    }
}

/// Fails (or returns) once it has started, before anyone asked it to stop.
struct Failing: Service, CustomStringConvertible {
    struct Broke: Error, Equatable {}
    let name: String
    let journal: Journal
    var throwing = true
    var description: String { name }

    func run() async throws {
        journal.write("start \(name)")
        try await Task.sleep(for: .milliseconds(50))
        if throwing { throw Broke() }
    }
}

/// A loop that stops when cancelled, as the reconciler's and the dispatcher's do.
struct Loop: Service, CustomStringConvertible {
    let name: String
    let journal: Journal
    var description: String { name }

    func run() async throws {
        journal.write("start \(name)")
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
        }
        journal.write("stop \(name)")
    }
}

@Suite(.serialized)
struct ServiceGroupTests {
    static func started(_ journal: Journal, _ names: [String]) async -> Bool {
        await eventually { names.allSatisfy { journal.contains("start \($0)") } }
    }

    @Test func servicesStopInTheReverseOfTheirOrderEachWaitedForBeforeTheOneBeforeIt() async throws {
        let journal = Journal()
        let group = ServiceGroup(services: [Graceful(name: "store", journal: journal), Loop(name: "reconciler", journal: journal),
                                            Graceful(name: "server", journal: journal)],
                                 terminationSignals: [], gracePeriod: .seconds(600))
        async let ran: Void = group.run()
        #expect(await Self.started(journal, ["store", "reconciler", "server"]))
        group.triggerGracefulShutdown()
        try await ran
        let stops = journal.all.filter { !$0.hasPrefix("start") }
        #expect(stops == ["told server", "stop server", "stop reconciler", "told store", "stop store"])
    }

    @Test func aServiceWhoseTurnHasNotComeSeesTheGroupStoppingWhileTheOnesAfterItDrain() async throws {
        /// Notes, while the service after it drains, whether the group is stopping.
        struct Watcher: Service, CustomStringConvertible {
            let journal: Journal
            var description: String { "watcher" }
            func run() async throws {
                journal.write("start watcher")
                #expect(!serviceGroupIsStopping())
                await cancelWhenGracefulShutdown {
                    while !Task.isCancelled {
                        // Seen from the unstructured task it runs its loop in, as a sweep loop is.
                        if serviceGroupIsStopping() && !journal.contains("saw stopping") { journal.write("saw stopping") }
                        try? await Task.sleep(for: .milliseconds(5))
                    }
                }
                journal.write("stop watcher")
            }
        }
        let journal = Journal()
        let group = ServiceGroup(services: [Watcher(journal: journal), Graceful(name: "server", journal: journal, windDown: .seconds(2))],
                                 terminationSignals: [], gracePeriod: .seconds(600))
        async let ran: Void = group.run()
        #expect(await Self.started(journal, ["watcher", "server"]))
        try await Task.sleep(for: .milliseconds(50))
        #expect(!journal.contains("saw stopping") && !serviceGroupIsStopping())
        group.triggerGracefulShutdown()
        try await ran
        // Seen while the server drained (its "told" and the sighting may come in either order),
        // before the watcher's own turn.
        let lines = journal.all.filter { !$0.hasPrefix("start") }
        #expect(Set(lines.prefix(2)) == ["told server", "saw stopping"] && Array(lines.dropFirst(2)) == ["stop server", "stop watcher"],
                "\(lines)")
    }

    @Test func aServiceThatIgnoresTheShutdownIsCancelledOnceTheGracePeriodHasPassedAndTheOthersStillStop() async throws {
        let journal = Journal()
        let group = ServiceGroup(services: [Graceful(name: "first", journal: journal), Stubborn(name: "stubborn", journal: journal)],
                                 terminationSignals: [], gracePeriod: .milliseconds(200))
        async let ran: Void = group.run()
        #expect(await Self.started(journal, ["first", "stubborn"]))
        group.triggerGracefulShutdown()
        try await ran
        // Told first (it came last), it stopped only when cancelled; the one before it was then
        // cancelled too, before it was told.
        #expect(journal.all.filter { !$0.hasPrefix("start") } == ["cancelled stubborn", "cancelled first"]
            || journal.all.filter { !$0.hasPrefix("start") } == ["cancelled first", "cancelled stubborn"])
    }

    @Test func aServiceThatFailsStopsTheOthersInReverseOrderAndItsErrorIsThrown() async throws {
        let journal = Journal()
        let group = ServiceGroup(services: [Graceful(name: "a", journal: journal), Failing(name: "broken", journal: journal),
                                            Graceful(name: "c", journal: journal)],
                                 terminationSignals: [], gracePeriod: .seconds(600))
        await #expect(throws: Failing.Broke()) { try await group.run() }
        #expect(journal.all.filter { !$0.hasPrefix("start") } == ["told c", "stop c", "told a", "stop a"])
    }

    @Test func aServiceThatReturnsBeforeItWasAskedToIsAFailureToo() async throws {
        let journal = Journal()
        let group = ServiceGroup(services: [Graceful(name: "a", journal: journal),
                                            Failing(name: "quitter", journal: journal, throwing: false)],
                                 terminationSignals: [], gracePeriod: .seconds(600))
        await #expect(throws: ServiceGroupError.serviceFinishedEarly("quitter")) { try await group.run() }
        #expect(journal.contains("stop a"))
    }

    @Test func aTerminationSignalStopsTheGroupAsTheTriggerDoes() async throws {
        let journal = Journal()
        let group = ServiceGroup(services: [Graceful(name: "a", journal: journal), Graceful(name: "b", journal: journal)],
                                 terminationSignals: [SIGUSR1], gracePeriod: .seconds(600))
        async let ran: Void = group.run()
        #expect(await Self.started(journal, ["a", "b"]))
        kill(getpid(), SIGUSR1)
        try await ran
        #expect(journal.all.filter { !$0.hasPrefix("start") } == ["told b", "stop b", "told a", "stop a"])
    }

    @Test func aSignalThatArrivesBeforeTheGroupRunsIsNotLost() async throws {
        let journal = Journal()
        let group = ServiceGroup(services: [Graceful(name: "a", journal: journal)], terminationSignals: [SIGUSR2],
                                 gracePeriod: .seconds(600))
        kill(getpid(), SIGUSR2)
        try await group.run()
        #expect(journal.contains("stop a"))
    }

    /// `serve` traps its signals from its first line, long before its services exist.
    @Test func signalsTrappedBeforeTheGroupWasMadeAndHandedToItStopItAtOnce() async throws {
        let journal = Journal()
        let trappedAtStart = UnixSignals([SIGPWR])
        kill(getpid(), SIGPWR)
        let group = ServiceGroup(services: [Graceful(name: "a", journal: journal)], terminationSignals: trappedAtStart,
                                 gracePeriod: .seconds(600))
        try await group.run()
        #expect(journal.contains("stop a"))
    }

    @Test func theShutdownIsLoggedWithWhatCausedIt() async throws {
        let records = InMemoryLogHandler()
        let group = ServiceGroup(services: [], terminationSignals: [], logger: Logger(label: "test", handler: records))
        group.triggerGracefulShutdown()
        try await group.run()
        #expect(records.all.map(\.message) == ["shutting down"])
        #expect(records.all.first?.metadata == ["reason": "requested"])
    }
}

struct GracefulShutdownTests {
    @Test func aHandlerRunsWhenTheShutdownFiresAndAtOnceWhenItHadFired() async {
        let trigger = GracefulShutdownTrigger()
        let calls = Atomic<Int>(0)
        await trigger.run {
            await withGracefulShutdownHandler {
                #expect(calls.load(ordering: .relaxed) == 0)
                trigger.trigger()
                #expect(calls.load(ordering: .relaxed) == 1)
            } onGracefulShutdown: {
                calls.add(1, ordering: .relaxed)
            }
            await withGracefulShutdownHandler {
                #expect(calls.load(ordering: .relaxed) == 2)
            } onGracefulShutdown: {
                calls.add(1, ordering: .relaxed)
            }
        }
        #expect(trigger.isTriggered)
    }

    @Test func waitingForTheShutdownEndsWhenItFiresOrThrowsWhenTheTaskIsCancelled() async throws {
        let trigger = GracefulShutdownTrigger()
        let waiting = Task { try await trigger.run { try await gracefulShutdown() } }
        trigger.trigger()
        try await waiting.value

        let cancelled = Task { try await GracefulShutdownTrigger().run { try await gracefulShutdown() } }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
    }

    @Test func anOperationRunUntilTheShutdownIsCancelledByIt() async {
        let trigger = GracefulShutdownTrigger()
        let turns = Atomic<Int>(0)
        let loop = Task {
            await trigger.run {
                await cancelWhenGracefulShutdown { () -> Bool in
                    while !Task.isCancelled {
                        turns.add(1, ordering: .relaxed)
                        try? await Task.sleep(for: .seconds(3600))
                    }
                    return Task.isCancelled
                }
            }
        }
        // Fired while the loop sleeps in its first turn, so only the shutdown can end it.
        #expect(await eventually { turns.load(ordering: .relaxed) == 1 })
        trigger.trigger()
        #expect(await loop.value)
        #expect(turns.load(ordering: .relaxed) == 1)
    }

    @Test func outsideAnyShutdownAHandlerNeverRunsAndTheOperationStillDoes() async {
        let ran = await withGracefulShutdownHandler { true } onGracefulShutdown: { Issue.record("no shutdown to fire it") }
        #expect(ran)
    }
}

struct UnixSignalsTests {
    @Test func aSignalCaughtIsReadFromTheSequence() async {
        let signals = UnixSignals([SIGWINCH])
        kill(getpid(), SIGWINCH)
        var iterator = signals.makeAsyncIterator()
        #expect(await iterator.next() == SIGWINCH)
        signals.cancel()
        #expect(await iterator.next() == nil)
    }
}
