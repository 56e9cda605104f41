import Foundation
import Testing

@testable import Identity

/// The commit numbers `SQLiteCommitProbe` tells this process's writes from other processes' by.
@Suite struct OwnCommitsTests {
    @Test func notedNumbersAreThisProcesssOnce() {
        let own = OwnCommits()
        own.began(5)
        own.committed(5)
        own.began(6)
        own.committed(6)
        #expect(own.consume(after: 4, through: 6) == .own)
        // Forgotten once seen: the same numbers committed again later are not taken for ours.
        #expect(own.consume(after: 4, through: 6) == .foreign)
    }

    /// The number of this process's transaction is readable in the instant between its commit and its note: the probe
    /// waits for the note instead of dropping every cached fact (it dropped them about ten times a second while every
    /// decision was recorded).
    @Test func aCommitNotYetNotedIsPendingThenOwn() {
        let own = OwnCommits()
        own.began(7)
        #expect(own.consume(after: 6, through: 7) == .pending)
        own.committed(7)
        #expect(own.consume(after: 6, through: 7) == .own)
    }

    /// The file changed but the number read had not moved, and this process's next commit was noted meanwhile: the
    /// change was that commit (the restart of a checkpointed log by it, seen before its number), so the probe looks
    /// again and then counts the commit as its own; with nothing noted after the number, an unnumbered change stays
    /// another process's.
    @Test func anUnmovedNumberWithOurNextCommitNotedIsPendingThenOwn() {
        let own = OwnCommits()
        own.began(129)
        own.committed(129)
        #expect(own.consume(after: 128, through: 128) == .pending)
        #expect(own.consume(after: 128, through: 129) == .own)
        #expect(own.consume(after: 129, through: 129) == .foreign)
    }

    /// A look began reading before this process's checkpoint ended, and saw the commit's number move: the checkpoint's
    /// own change was not read yet, so the next unnumbered change is that checkpoint (once); a look that began after
    /// the checkpoint ended saw it with the number, and excuses nothing after.
    @Test func aCheckpointEndingDuringALookExcusesTheNextUnnumberedChange() {
        let own = OwnCommits()
        own.began(5)
        let look = own.lookBegins()
        own.checkpointBegan()
        own.checkpointEnded()
        own.committed(5)
        #expect(own.consume(after: 4, through: 5, look: look) == .own)
        #expect(own.consume(after: 5, through: 5, look: own.lookBegins()) == .own)
        #expect(own.consume(after: 5, through: 5, look: own.lookBegins()) == .foreign)

        own.began(6)
        own.checkpointBegan()
        own.checkpointEnded()
        own.committed(6)
        #expect(own.consume(after: 5, through: 6, look: own.lookBegins()) == .own)
        #expect(own.consume(after: 6, through: 6, look: own.lookBegins()) == .foreign)
    }

    /// A write transaction of this process is open (not numbered yet: its number is set at its end): an unnumbered
    /// change may be its pages, spilled to the WAL early, so the probe looks again; once it ended, such a change is
    /// another process's.
    @Test func anUnnumberedChangeWhileAWriteIsOpenIsPending() {
        let own = OwnCommits()
        own.opened()
        #expect(own.consume(after: 3, through: 3) == .pending)
        own.closed()
        #expect(own.consume(after: 3, through: 3) == .foreign)
    }

    /// A rolled-back number is free: another process may commit it next, and that commit must be seen.
    @Test func aRolledBackNumberCommittedByAnotherProcessIsForeign() {
        let own = OwnCommits()
        own.began(7)
        own.rolledBack(7)
        #expect(own.consume(after: 6, through: 7) == .foreign)
    }

    /// Another process's commit before one of ours in flight is seen at once, not waited on.
    @Test func anotherProcesssNumberBeforeOneInFlightIsForeign() {
        let own = OwnCommits()
        own.began(8)
        #expect(own.consume(after: 6, through: 8) == .foreign)
        own.began(9)
        own.committed(9)
        #expect(own.consume(after: 7, through: 9) == .foreign)
    }

    @Test func noNumberMovedIsForeign() {
        let own = OwnCommits()
        own.began(3)
        own.committed(3)
        #expect(own.consume(after: 3, through: 3) == .foreign)
    }

    /// A commit of this process restarts a checkpointed log before its number is readable: a look then waits.
    @Test func noNumberMovedDuringACommitOfThisProcessIsPending() {
        let own = OwnCommits()
        own.began(4)
        #expect(own.consume(after: 3, through: 3) == .pending)
        own.rolledBack(4)
        #expect(own.consume(after: 3, through: 3) == .foreign)
    }

    @Test func numbersWrapAfterTheLargest() {
        let own = OwnCommits()
        own.began(Int32.max)
        own.committed(Int32.max)
        own.began(1)
        own.committed(1)
        #expect(own.consume(after: Int32.max - 1, through: 1) == .own)
    }
}

/// This process's WAL checkpoints move `PRAGMA data_version` for the probe's connection without a number: taken for
/// another process's write, each dropped every cached session and resource (several times a second while every
/// decision was recorded).
@Suite struct OwnCheckpointTests {
    @Test func aCheckpointIsPendingWhileItRunsThenOwnOnce() {
        let own = OwnCommits()
        own.checkpointBegan()
        #expect(own.consume(after: 3, through: 3) == .pending)
        own.checkpointEnded()
        #expect(own.consume(after: 3, through: 3) == .own)
        #expect(own.consume(after: 3, through: 3) == .foreign)
    }

    @Test func aCheckpointSeenWithNumbersExcusesNothingAfter() {
        let own = OwnCommits()
        own.began(4)
        own.committed(4)
        own.checkpointBegan()
        own.checkpointEnded()
        #expect(own.consume(after: 3, through: 4) == .own)
        #expect(own.consume(after: 4, through: 4) == .foreign)
    }
}
