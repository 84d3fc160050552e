import { createHmac, hkdfSync, type KeyObject, randomBytes, timingSafeEqual } from 'node:crypto';
import { limits } from '../../shared/limits.ts';

/** The device cookie's name: kept by the browser across logouts, sent to the login route only. */
export const DEVICE_COOKIE = 'interlock_device';

/** What the HMAC key is derived for, so it can serve nothing else. */
const KEY_INFO = 'interlock device cookie v1';

/**
 * Device cookies (OWASP's answer to lockouts): a successful login leaves a cookie naming the
 * person, signed by the server, and a browser that brings it back is not held by the ceiling on
 * failed logins for that name, which guessers from elsewhere reach. Its key is derived from the
 * receipt signing key, so cookies outlive a restart and whoever could forge them could already
 * sign receipts.
 */
export class DeviceCookies {
  readonly #key: Buffer;

  constructor(
    signingKey: KeyObject,
    private readonly wallMs: () => number,
  ) {
    const secret = signingKey.export({ format: 'der', type: 'pkcs8' });
    this.#key = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), KEY_INFO, 32));
  }

  /** A cookie value for `name`, good for limits.deviceCookieMaxAgeMs. */
  issue(name: string): string {
    const expiresAtMs = this.wallMs() + limits.deviceCookieMaxAgeMs;
    const body = `${Buffer.from(name).toString('base64url')}.${expiresAtMs}.${randomBytes(12).toString('base64url')}`;
    return `${body}.${this.#mac(body)}`;
  }

  /** True when `value` is a cookie this server issued for `name`, and it has not expired. */
  names(value: string | undefined, name: string): boolean {
    if (value === undefined) return false;
    const parts = value.split('.');
    if (parts.length !== 4) return false;
    const [encodedName = '', expires = '', nonce = '', mac = ''] = parts;
    const expected = Buffer.from(this.#mac(`${encodedName}.${expires}.${nonce}`));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return false;
    return Buffer.from(encodedName, 'base64url').toString() === name && /^\d{1,16}$/.test(expires) && Number(expires) > this.wallMs();
  }

  #mac(body: string): string {
    return createHmac('sha256', this.#key).update(body).digest('base64url');
  }
}
