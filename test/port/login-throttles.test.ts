import { MemoryLoginThrottles } from '../../db/memory/login-throttles.ts';
import type { LoginCounts, LoginKeys, LoginStepResult, LoginThrottles } from '../../db/port/login-throttles.ts';
import { type ContractBackend, plantedFails, runContract } from './contract.ts';
import { type LoginThrottlesEnv, loginThrottlesCases } from './login-throttles.contract.ts';

// The login-count store in memory (what a SQLite storage uses): one store is the one server's, so
// another connection onto it is the same store. PostgreSQL's runs in test/port/pg-login-throttles.test.ts.

const memory: ContractBackend<LoginThrottlesEnv> = {
  name: 'memory',
  make: () => {
    const store = new MemoryLoginThrottles();
    return {
      store,
      other: () => store,
      bounded: (entriesMax) => {
        const bounded = new MemoryLoginThrottles({ entriesMax });
        return { store: bounded, kept: async (kind) => bounded.size(kind) };
      },
    };
  },
};

runContract('login throttles', loginThrottlesCases, [memory]);

/** A planted bad store: it reads the counts, lets other steps run, then writes what it decided on what it read. */
class ReadThenWriteLoginThrottles implements LoginThrottles {
  constructor(private readonly inner: LoginThrottles) {}

  async step<T>(keys: LoginKeys, nowMs: number, decide: (counts: LoginCounts) => LoginStepResult<T>): Promise<T> {
    let read: LoginCounts = { pair: undefined, name: undefined, address: undefined };
    await this.inner.step(keys, nowMs, (counts) => {
      read = counts;
      return { writes: {}, answer: undefined };
    });
    await new Promise((resolve) => setImmediate(resolve));
    return this.inner.step(keys, nowMs, () => decide(read));
  }
}

plantedFails('login throttles', loginThrottlesCases, ['failures sent at once to two servers are all counted: the ceiling lets exactly its number through'], {
  name: 'a memory store that reads, lets other steps run, then writes',
  make: () => {
    const store = new ReadThenWriteLoginThrottles(new MemoryLoginThrottles());
    return { store, other: () => store, bounded: () => ({ store, kept: async () => 0 }) };
  },
});
