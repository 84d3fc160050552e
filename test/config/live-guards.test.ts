import { describe, expect, it } from 'vitest';
import { decideLiveGuards, describeFailedGuards, LIVE_GUARDS, type LiveFacts, type LiveGuard } from '../../server/config/live-guards.ts';

/** Facts on which every production guard holds. */
const GUARDED: LiveFacts = {
  publishedSecretHeld: false,
  publicUrl: 'https://interlock.example.com',
  receiptKeyInDataDir: false,
  testMode: false,
  demoAsked: false,
  sandboxUrlSet: false,
};

describe('live mode starts only when every production guard holds', () => {
  it.each<[string, Partial<LiveFacts>, LiveGuard[]]>([
    ['every guard held', {}, []],
    ['a demo password or token still in the config', { publishedSecretHeld: true }, ['demo_credentials_refused']],
    ['no public_url', { publicUrl: null }, ['https_public_url']],
    ['an http public_url', { publicUrl: 'http://interlock.example.com' }, ['https_public_url']],
    ['a public_url that is no URL', { publicUrl: 'interlock.example.com' }, ['https_public_url']],
    ['the receipt key in the data folder', { receiptKeyInDataDir: true }, ['receipt_key_outside_data_dir']],
    ['test_mode and its movable clock', { testMode: true }, ['no_test_mode']],
    ['demo traffic asked for', { demoAsked: true }, ['no_demo_traffic']],
    ['a sandbox at STRIPE_SANDBOX_URL', { sandboxUrlSet: true }, ['no_sandbox']],
    [
      'every guard failed, named in order',
      { publishedSecretHeld: true, publicUrl: null, receiptKeyInDataDir: true, testMode: true, demoAsked: true, sandboxUrlSet: true },
      [...LIVE_GUARDS],
    ],
  ])('%s: %j fails %j', (_name, change, failed) => {
    expect(decideLiveGuards({ ...GUARDED, ...change }).map((f) => f.guard)).toEqual(failed);
  });

  it('the refusal is one line naming each failed guard and what to do', () => {
    const line = describeFailedGuards(decideLiveGuards({ ...GUARDED, publicUrl: null, testMode: true }));
    expect(line).toBe(
      'stripe.mode: live needs every production guard, and 2 failed: https_public_url (public_url must be the https address people reach the inbox at); ' +
        'no_test_mode (test_mode (its movable clock and clock-moving endpoint) must be off)',
    );
    expect(line).not.toContain('\n');
  });
});
