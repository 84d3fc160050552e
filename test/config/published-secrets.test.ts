import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ConfigError, DEFAULT_CONFIG_PATH, parseConfig } from '../../server/config/load.ts';
import { PUBLISHED_PASSWORD_HASHES, PUBLISHED_TOKEN_SHA256S } from '../../server/config/published-secrets.ts';
import { hashPassword, hashToken, verifyPassword } from '../../server/config/secrets.ts';
import { AGENT_TOKEN, DEMO_PASSWORD } from '../support/app-world.ts';
import { withOwnSecrets } from '../support/server-process.ts';

// The demo credentials published in the shipped interlock.yaml work with the embedded sandbox and
// are refused by entry with Stripe test mode (and live mode, once it exists).

const shipped = readFileSync(DEFAULT_CONFIG_PATH, 'utf8');
const inTestMode = (text: string) => text.replace(/^stripe: \{ mode: sandbox \}$/m, 'stripe: { mode: test }');

function refusal(text: string): string {
  try {
    parseConfig(text, 'interlock.yaml');
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('expected a ConfigError, but the config loaded');
}

/** The shipped file with every person's password hash replaced by one of the operator's own, the agent's token left as published. */
function ownPasswords(text: string): string {
  const agents = text.slice(text.indexOf('\nagents:'));
  return withOwnSecrets(text.slice(0, text.indexOf('\nagents:'))) + agents;
}

describe('published demo credentials', () => {
  it('the list holds exactly the secrets the shipped interlock.yaml publishes, which are the demo password and token', async () => {
    const file = parse(shipped) as { people: { password: string }[]; agents: { token_sha256: string }[] };
    expect(file.people.map((p) => p.password).sort()).toEqual([...PUBLISHED_PASSWORD_HASHES].sort());
    expect(file.agents.map((a) => a.token_sha256)).toEqual([...PUBLISHED_TOKEN_SHA256S]);
    expect(await verifyPassword(DEMO_PASSWORD, PUBLISHED_PASSWORD_HASHES[0]!)).toBe(true);
    expect(PUBLISHED_TOKEN_SHA256S).toEqual([hashToken(AGENT_TOKEN)]);
  });

  it('work with the embedded sandbox, as npm start runs it', () => {
    expect(parseConfig(shipped, 'interlock.yaml').stripe.mode).toBe('sandbox');
  });

  it.each([
    ['any password still published', inTestMode(shipped), 'interlock.yaml: people[0].password: ana still has the demo password published in the shipped interlock.yaml, which anyone can use with stripe.mode: test; make a new hash with `npm run hash-secret -- password <password>`'],
    ['one password left published', inTestMode(ownPasswords(shipped)).replace(/(name: fin[\s\S]*?password: )"[^"]+"/, (_all, before: string) => `${before}"${PUBLISHED_PASSWORD_HASHES[0]}"`), 'interlock.yaml: people[6].password: fin still has the demo password'],
    ['the agent token, once every password is the operator’s own', inTestMode(ownPasswords(shipped)), 'interlock.yaml: agents[0].token_sha256: support-bot still has the demo token published in the shipped interlock.yaml, which anyone can use with stripe.mode: test; make a new token and hash it with `npm run hash-secret -- token <token>`'],
  ])('are refused with Stripe test mode: %s', (_what, text, message) => {
    expect(refusal(text)).toContain(message);
  });

  it('are refused with Stripe test mode when the demo password is hashed again with a salt of its own', async () => {
    const resalted = await hashPassword(DEMO_PASSWORD);
    expect(PUBLISHED_PASSWORD_HASHES).not.toContain(resalted);
    const text = inTestMode(withOwnSecrets(shipped)).replace(/(name: rita[\s\S]*?password: )"[^"]+"/, (_all, before: string) => `${before}"${resalted}"`);
    expect(refusal(text)).toContain(
      'interlock.yaml: people[5].password: rita has a password hash of the demo password published with the shipped interlock.yaml (interlock-demo), which anyone can use with stripe.mode: test; make a new hash of a password of your own with `npm run hash-secret -- password <password>`',
    );
    // The embedded sandbox takes it, as it takes the shipped hashes.
    expect(parseConfig(withOwnSecrets(shipped).replace(/(name: rita[\s\S]*?password: )"[^"]+"/, (_all, before: string) => `${before}"${resalted}"`), 'interlock.yaml').stripe.mode).toBe('sandbox');
  });

  it('a config of the operator’s own secrets loads with Stripe test mode', () => {
    const own = inTestMode(withOwnSecrets(shipped));
    expect(parseConfig(own, 'interlock.yaml').stripe.mode).toBe('test');
  });
});
