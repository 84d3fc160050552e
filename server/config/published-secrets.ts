import { toolCommand } from '../tools.ts';
import type { Checker } from './check.ts';
import type { AgentConfig, PersonConfig, StripeMode } from './schema.ts';
import { verifyPasswordSync } from './secrets.ts';

/**
 * The secrets the shipped interlock.yaml publishes for the local demo: every person's hash of the
 * password `interlock-demo`, and the SHA-256 of the agent token `sk_agent_demo_support_bot`. They
 * are in the repository and the README, so anyone can log in or ask for refunds with them: they
 * are good for the embedded sandbox and nowhere else. test/config/published-secrets.test.ts keeps
 * this list equal to the shipped file's.
 */
export const PUBLISHED_PASSWORD_HASHES: readonly string[] = [
  'scrypt$16384$8$1$nt/uKuEqtc6vdHD/yYTycw==$Np8CF5dUL30DXvdoe/NYTR/5EsOD7Y0cw/HElQicqCM=',
  'scrypt$16384$8$1$iMrFJaeMb63Uq7AZwwGrPA==$v7BmGtiLUInfF56AqiifPT40aSA3KETg67HZU7tTZNY=',
  'scrypt$16384$8$1$SfQ4L94fIvQ115DbwFIi+A==$YpcYy47raxvEW3f0qfCXACp9gArRtqzfk+u75uAqg2g=',
  'scrypt$16384$8$1$/OqdAWe5oNCE5oo3sfuWWg==$41zuK/ADB1rml1ZCW3BgY0Fy2//zNQojwG42IGbc4xQ=',
  'scrypt$16384$8$1$DturMdBIt1pmVjuQOMXdbA==$GO6XzdVD6S3OqG07mSU5JSZiPaHFQgoWt8sS6UpNLUw=',
  'scrypt$16384$8$1$B0FyBwZINBNWw4Q2IYpozw==$L+Oib5UbwmjiIULgvZ7RhyM4UjzvJ2uyFbv6RJkDc/I=',
  'scrypt$16384$8$1$OxCPzuAEzeUBoXjbVQ+b3A==$k4gP0ecrgPOAlxgWaldaFVt6o+E5+mYpvj9/rOEJhMk=',
];
export const PUBLISHED_TOKEN_SHA256S: readonly string[] = ['53b6ad39466f9cc8e863f0acb88a5b6d1aa4bdf4ebf324a146335a93b093f30f'];

/** The demo password the shipped interlock.yaml's hashes are of, and the README gives. */
export const PUBLISHED_PASSWORD = 'interlock-demo';


/**
 * Whether each stored hash (outside the shipped list) is of the demo password, remembered by the
 * hash's text: a reload of an unchanged file hashes nothing again. Bounded, and emptied when full,
 * which costs a check again, never a wrong answer.
 */
const demoVerdicts = new Map<string, boolean>();
const DEMO_VERDICTS_MAX = 10_000;

/** True when `stored` is a hash of the published demo password, whatever its salt: one scrypt the first time a hash is seen. */
export function isDemoPasswordHash(stored: string): boolean {
  if (PUBLISHED_PASSWORD_HASHES.includes(stored)) return true;
  const known = demoVerdicts.get(stored);
  if (known !== undefined) return known;
  const verdict = verifyPasswordSync(PUBLISHED_PASSWORD, stored);
  if (demoVerdicts.size >= DEMO_VERDICTS_MAX) demoVerdicts.clear();
  demoVerdicts.set(stored, verdict);
  return verdict;
}

/** True when a person or agent still holds a secret the shipped interlock.yaml publishes. */
export function holdsPublishedSecret(people: readonly Pick<PersonConfig, 'passwordHash'>[], agents: readonly Pick<AgentConfig, 'tokenSha256'>[]): boolean {
  return people.some((person) => PUBLISHED_PASSWORD_HASHES.includes(person.passwordHash)) || agents.some((agent) => PUBLISHED_TOKEN_SHA256S.includes(agent.tokenSha256));
}

/**
 * Outside the embedded sandbox (Stripe test mode and live mode) a published
 * secret would let anyone act with real Stripe: the first person or agent still holding one is
 * refused by its entry, and the server does not start (or the reload is refused). A password hash
 * is refused when it is one of the shipped ones, or when the demo password verifies against it
 * (the same password hashed again with a new salt): one scrypt per person whose hash was not seen
 * before, at start and at reload, and none in the sandbox.
 */
export function refusePublishedSecrets(c: Checker, mode: StripeMode, people: readonly PersonConfig[], agents: readonly AgentConfig[]): void {
  if (mode === 'sandbox') return;
  const where = `with stripe.mode: ${mode}`;
  people.forEach((person, i) => {
    if (PUBLISHED_PASSWORD_HASHES.includes(person.passwordHash)) {
      c.fail(
        `people[${i}].password`,
        `${person.name} still has the demo password published in the shipped interlock.yaml, which anyone can use ${where}; make a new hash with \`${toolCommand('hash-secret', 'password <password>')}\``,
      );
    }
    if (isDemoPasswordHash(person.passwordHash)) {
      c.fail(
        `people[${i}].password`,
        `${person.name} has a password hash of the demo password published with the shipped interlock.yaml (${PUBLISHED_PASSWORD}), which anyone can use ${where}; make a new hash of a password of your own with \`${toolCommand('hash-secret', 'password <password>')}\``,
      );
    }
  });
  agents.forEach((agent, i) => {
    if (!PUBLISHED_TOKEN_SHA256S.includes(agent.tokenSha256)) return;
    c.fail(
      `agents[${i}].token_sha256`,
      `${agent.name} still has the demo token published in the shipped interlock.yaml, which anyone can use ${where}; make a new token and hash it with \`${toolCommand('hash-secret', 'token <token>')}\``,
    );
  });
}
