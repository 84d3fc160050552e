import { isDeepStrictEqual } from 'node:util';
import path from 'node:path';
import Database from 'better-sqlite3';
import { loadConfig } from '../server/config/load.ts';
import { connectSandbox, type RemoteSandbox } from '../server/sandbox/remote.ts';
import type { RequestCounts } from '../server/sandbox/counts.ts';
import { budgetFromConfig } from '../server/app/services.ts';
import { BUDGET_WINDOW_MS } from '../server/stripe/budget.ts';
import { type BurstResult, runBurst } from './burst.ts';
import { BURST_MODES, BURST_STRIPE_CONFIG, type BurstMode, configuredCapacity, describeFloor, floorS } from './burst-floor.ts';
import { writeStripeConfig } from './configs.ts';
import { createPaymentIntents } from './http.ts';
import { startSandboxProcess, startServerProcess, type Started } from './processes.ts';
import { type Plan, push, type Samples, say } from './stages.ts';
import { repeat, sleep } from './stats.ts';

// Interlock under Stripe's rate limits: bursts of agents, each with a routine refund of a payment
// of its own, through real HTTP to a server process whose budget is configured for the limits
// that the sandbox (in a process of its own) holds, as Stripe would. Stripe's calls are counted
// where Stripe counts them, at the sandbox.

/** A burst that has not settled in this many times its floor (plus BURST_DEADLINE_SLACK_MS) is stopped and counted as unsettled. */
const BURST_DEADLINE_FLOORS = 3;
const BURST_DEADLINE_SLACK_MS = 30_000;
/** After the warm-up, its calls leave the sandbox's window and Interlock's budget (a place is held a second after its answer). */
const AFTER_WARMUP_MS = 2 * BUDGET_WINDOW_MS;

/** What one burst left: the agents' view, Stripe's counts and the journal's escalations. */
interface BurstRun {
  burst: BurstResult;
  counts: RequestCounts;
  escalated: number;
}

/** Every request the sandbox answered on `/v1/...`, whatever it answered. */
function callsIn(counts: RequestCounts): number {
  return Object.values(counts.total).reduce((sum, n) => sum + n, 0);
}

/** Chains in a journal that went to a person. */
function countEscalated(file: string): number {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare("SELECT count(DISTINCT effect_id) FROM entries WHERE kind = 'ESCALATED'").pluck().get() as number;
  } finally {
    db.close();
  }
}

/** The config file for a mode, after checking the budget Interlock builds from it is the one the floor assumes. */
function configFor(dir: string, mode: BurstMode): string {
  const file = writeStripeConfig(dir, `stripe-${mode}`, BURST_STRIPE_CONFIG[mode]);
  const built = budgetFromConfig(loadConfig(file)).capacity;
  if (!isDeepStrictEqual(built, configuredCapacity(mode))) {
    throw new Error(`the ${mode} config gives a budget of ${JSON.stringify(built)}, not the ${JSON.stringify(configuredCapacity(mode))} its floor is computed at`);
  }
  return file;
}

/** A fresh server (an empty journal in `dir/name`) run with `configPath`. */
interface BurstServer {
  server: Started;
  journal: string;
}

async function startBurstServer(dir: string, name: string, sandbox: Started, configPath: string): Promise<BurstServer> {
  const dataDir = path.join(dir, name);
  const server = await startServerProcess({ dataDir, sandboxUrl: sandbox.url, configPath });
  return { server, journal: path.join(dataDir, 'interlock.sqlite') };
}

/** One burst under `mode`'s limits against `started`, after a short warm-up; the server is stopped after it. */
async function burstRun(plan: Plan, sandbox: Started, remote: RemoteSandbox, mode: BurstMode, started: BurstServer, rep: number): Promise<BurstRun> {
  const refunds = plan.burstRefunds[mode];
  const { server, journal } = started;
  let run: Omit<BurstRun, 'escalated'>;
  try {
    await remote.configure({ rateLimits: mode });
    const deadlineMs = BURST_DEADLINE_FLOORS * 1000 * floorS(refunds, configuredCapacity(mode)) + BURST_DEADLINE_SLACK_MS;
    const intents = await createPaymentIntents(sandbox.url, refunds + plan.burstWarmupRefunds);
    if (plan.burstWarmupRefunds > 0) {
      const warm = await runBurst(server.url, intents.slice(refunds), { tag: `warm-${mode}-r${rep}`, deadlineMs });
      if (warm.notCommitted > 0) throw new Error(`${warm.notCommitted} of ${warm.agents} warm-up refunds under ${mode}-mode limits were not committed`);
      await sleep(AFTER_WARMUP_MS);
    }
    await remote.resetRequestCounts();
    const burst = await runBurst(server.url, intents.slice(0, refunds), { tag: `${mode}-r${rep}`, deadlineMs });
    run = { burst, counts: await remote.requestCounts() };
  } finally {
    await server.stop();
  }
  const escalated = countEscalated(journal);
  const { burst, counts } = run;
  say(
    `stripe-limits ${mode} rep ${rep}: ${burst.agents} agents settled in ${burst.settleS.toFixed(1)} s (floor ${floorS(refunds, configuredCapacity(mode)).toFixed(1)} s); ` +
      `${callsIn(counts)} Stripe calls (${counts.total.rate_limited} answered 429), first answer p99 ${burst.firstAnswerP99Ms.toFixed(0)} ms; ` +
      `${burst.turnedAway} answers 429 from Interlock, ${burst.unsettled} unsettled, ${burst.notCommitted} not committed, ${escalated} to a person, ${burst.networkErrors} connection errors`,
  );
  return { burst, counts, escalated };
}

/**
 * Per repetition, a burst under test-mode limits and one under live-mode limits, each against a
 * fresh server configured for them (both started before the first burst, so the stage waits for
 * one start-up a repetition); one sandbox process holds each mode's limits in turn.
 */
export async function stripeLimitsStage(plan: Plan, dir: string): Promise<Samples> {
  const configs = Object.fromEntries(BURST_MODES.map((mode) => [mode, configFor(dir, mode)])) as Record<BurstMode, string>;
  for (const mode of BURST_MODES) say(`stripe-limits floor: ${describeFloor(mode, plan.burstRefunds[mode])}`);
  const samples: Samples = {};
  const sandbox = await startSandboxProcess();
  const remote = connectSandbox(sandbox.url);
  try {
    await repeat(plan.reps, async (rep) => {
      const [testServer, liveServer] = await Promise.all(BURST_MODES.map((mode) => startBurstServer(dir, `stripe-${mode}-r${rep}`, sandbox, configs[mode])));
      let test: BurstRun;
      try {
        test = await burstRun(plan, sandbox, remote, 'test', testServer!, rep);
      } catch (error) {
        await liveServer!.server.stop();
        throw error;
      }
      const live = await burstRun(plan, sandbox, remote, 'live', liveServer!, rep);
      const calls = callsIn(test.counts) + callsIn(live.counts);
      push(samples, {
        stripe_calls_per_refund: calls / (test.burst.agents + live.burst.agents),
        burst_settle_s_test: test.burst.settleS,
        burst_settle_s_live: live.burst.settleS,
        burst_429s: (test.counts.total.rate_limited + live.counts.total.rate_limited) / calls,
        burst_to_person: test.escalated + live.escalated,
        burst_first_answer_p99_ms_200_agents: test.burst.firstAnswerP99Ms,
        burst_first_answer_p99_ms_1000_agents: live.burst.firstAnswerP99Ms,
        burst_first_answer_p50_ms_200_agents: test.burst.firstAnswerP50Ms,
        burst_first_answer_p50_ms_1000_agents: live.burst.firstAnswerP50Ms,
        burst_first_answer_wait_p99_ms_200_agents: test.burst.firstAnswerWaitP99Ms,
        burst_first_answer_wait_p99_ms_1000_agents: live.burst.firstAnswerWaitP99Ms,
        burst_turned_away_200_agents: test.burst.turnedAway,
        burst_turned_away_1000_agents: live.burst.turnedAway,
        burst_not_committed: test.burst.notCommitted + live.burst.notCommitted,
        burst_connection_errors: test.burst.networkErrors + live.burst.networkErrors,
        burst_agents_lag_max_ms: Math.max(test.burst.agentsLagMaxMs, live.burst.agentsLagMaxMs),
      });
    });
  } finally {
    await sandbox.stop();
  }
  return samples;
}
