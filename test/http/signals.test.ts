import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { answerSignals, type Signalled } from '../../server/app/signals.ts';

// The signals `npm start` answers, from before the start: a SIGHUP while the server comes up is
// acted on once it is up (an operator who edited the file then is not left with the old config
// and a reload they believe happened); SIGTERM stops it once, gracefully.

function server() {
  const said: string[] = [];
  const calls = { reloads: 0, closes: 0 };
  const running: Signalled = {
    app: { log: { info: (message) => said.push(message), error: (_fields, message) => said.push(message) } },
    reload: async () => {
      calls.reloads += 1;
    },
    close: async () => {
      calls.closes += 1;
    },
  };
  return { running, said, calls };
}

describe('the signals npm start answers', () => {
  it('a SIGHUP during the start reloads the config once the server is up, and says why', async () => {
    const signals = new EventEmitter();
    const { running, said, calls } = server();
    let up!: (value: Signalled) => void;
    const answered = answerSignals(new Promise<Signalled>((resolve) => (up = resolve)), signals, () => {});
    signals.emit('SIGHUP');
    signals.emit('SIGHUP');
    expect(calls.reloads).toBe(0);
    up(running);
    await answered;
    expect(calls.reloads).toBe(1);
    expect(said).toEqual(['a SIGHUP came while the server was starting: the config is read again now', 'SIGHUP: reloading the config']);
    signals.emit('SIGHUP');
    expect(calls.reloads).toBe(2);
  });

  it('with no SIGHUP during the start, nothing is reloaded; SIGTERM closes once and exits 0, and a SIGHUP after it is ignored', async () => {
    const signals = new EventEmitter();
    const { running, calls } = server();
    const exits: number[] = [];
    await answerSignals(Promise.resolve(running), signals, (code) => exits.push(code));
    expect(calls.reloads).toBe(0);
    signals.emit('SIGTERM');
    signals.emit('SIGINT');
    signals.emit('SIGHUP');
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect([calls.closes, exits, calls.reloads]).toEqual([1, [0], 0]);
  });

  it('a start that fails is the caller’s to tell: the failure comes through', async () => {
    const signals = new EventEmitter();
    await expect(answerSignals(Promise.reject(new Error('config refused')), signals, () => {})).rejects.toThrow('config refused');
    expect(signals.listenerCount('SIGTERM')).toBe(0);
  });
});
