import { describe, expect, it } from 'vitest';
import { type BatchStorage, GroupCommit } from '../../db/group-commit.ts';

/**
 * A storage of numbers in an array, with transactions that copy on begin, and a switch that
 * makes the next commits fail after their work ran: how a failed fsync or COMMIT looks.
 */
class FlakyStorage implements BatchStorage<number[]> {
  committed: number[] = [];
  failNextCommits = 0;
  transactions = 0;

  async transaction<T>(fn: (tx: number[]) => Promise<T>): Promise<T> {
    this.transactions += 1;
    const tx = [...this.committed];
    const result = await fn(tx);
    if (this.failNextCommits > 0) {
      this.failNextCommits -= 1;
      throw new Error('disk I/O error');
    }
    this.committed = tx;
    return result;
  }

  async isolated<T>(tx: number[], fn: (tx: number[]) => Promise<T>): Promise<T> {
    const length = tx.length;
    try {
      return await fn(tx);
    } catch (error) {
      tx.length = length;
      throw error;
    }
  }
}

/** An operation that appends `n` and answers how many values it saw before it. */
const push = (n: number) => async (tx: number[]) => {
  const seen = tx.length;
  // A step that answers later, as a driver over a socket does: the batch's other operations wait.
  await new Promise((resolve) => setImmediate(resolve));
  tx.push(n);
  return seen;
};

describe('GroupCommit when a batch fails to commit', () => {
  it('every operation runs again in its own transaction and is answered from that run', async () => {
    const storage = new FlakyStorage();
    const commits = new GroupCommit(storage);
    storage.failNextCommits = 1;
    const answers = await Promise.all([1, 2, 3].map((n) => commits.submit(push(n))));
    expect(storage.committed).toEqual([1, 2, 3]);
    expect(answers).toEqual([0, 1, 2]);
    expect(storage.transactions).toBe(4);
    expect(commits.stats).toMatchObject({ batches: 1, ops: 3, retriedBatches: 1 });
  });

  it('an operation whose own retry fails too is rejected, and is not in the store', async () => {
    const storage = new FlakyStorage();
    const commits = new GroupCommit(storage);
    // The batch fails, then the first operation's own transaction fails; the other two commit.
    storage.failNextCommits = 2;
    const results = await Promise.allSettled([1, 2, 3].map((n) => commits.submit(push(n))));
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect(storage.committed).toEqual([2, 3]);
  });

  it('a batch whose commit may have happened (mayRunAgain says no) runs nothing again: every operation is refused with the error', async () => {
    const storage = new FlakyStorage();
    const unknown = new Error('connection lost during COMMIT');
    // The commit fails with an error that leaves it open whether it happened.
    const commits = new GroupCommit({
      transaction: async <T>(fn: (tx: number[]) => Promise<T>) => {
        await storage.transaction(fn);
        throw unknown;
      },
      isolated: (tx, fn) => storage.isolated(tx, fn),
      mayRunAgain: (error) => error !== unknown,
    });
    const results = await Promise.allSettled([1, 2, 3].map((n) => commits.submit(push(n))));
    expect(results).toEqual([1, 2, 3].map(() => ({ status: 'rejected', reason: unknown })));
    expect(storage.transactions).toBe(1);
    expect(commits.stats).toMatchObject({ batches: 1, ops: 3, retriedBatches: 0, unknownBatches: 1 });
  });

  it('no promise settles before its batch has finished: answers arrive after the commit', async () => {
    const storage = new FlakyStorage();
    const commits = new GroupCommit(storage);
    const storedWhenAnswered: number[][] = [];
    await Promise.all([1, 2].map((n) => commits.submit(push(n)).then(() => storedWhenAnswered.push([...storage.committed]))));
    expect(storedWhenAnswered).toEqual([
      [1, 2],
      [1, 2],
    ]);
  });

  it('an operation queued by another operation while a batch runs is committed in a later batch', async () => {
    const storage = new FlakyStorage();
    const commits = new GroupCommit(storage, { opsMax: 1 });
    let inner: Promise<number> | undefined;
    const outer = commits.submit((tx) => {
      inner = commits.submit(push(2));
      return push(1)(tx);
    });
    expect(await outer).toBe(0);
    expect(await inner).toBe(1);
    expect(storage.committed).toEqual([1, 2]);
    expect(commits.stats.batches).toBe(2);
  });
});
