"""Known answers for Interlock's signed checkpoints, computed apart from its code.

Only the Python standard library: hashlib, base64, json, and Ed25519 as RFC 8032 section 6
gives it. Reads {"seed_hex", "key_id", "origin", "size", "head"} as JSON on stdin and prints the
public key, key name, key hash, verifier key, checkpoint body, signed note, and the RFC 8032
test 1 signature of the empty message (a check of this Ed25519 itself).
"""
import base64
import hashlib
import json
import sys

p = 2**255 - 19
d = -121665 * pow(121666, p - 2, p) % p
q = 2**252 + 27742317777372353535851937790883648493


def sha512(s):
    return hashlib.sha512(s).digest()


def point_add(P, Q):
    A = (P[1] - P[0]) * (Q[1] - Q[0]) % p
    B = (P[1] + P[0]) * (Q[1] + Q[0]) % p
    C = 2 * P[3] * Q[3] * d % p
    D = 2 * P[2] * Q[2] % p
    E, F, G, H = B - A, D - C, D + C, B + A
    return (E * F % p, G * H % p, F * G % p, E * H % p)


def point_mul(s, P):
    Q = (0, 1, 1, 0)
    while s > 0:
        if s & 1:
            Q = point_add(Q, P)
        P = point_add(P, P)
        s >>= 1
    return Q


def modp_inv(x):
    return pow(x, p - 2, p)


modp_sqrt_m1 = pow(2, (p - 1) // 4, p)


def recover_x(y, sign):
    x2 = (y * y - 1) * modp_inv(d * y * y + 1)
    if x2 == 0:
        return 0
    x = pow(x2, (p + 3) // 8, p)
    if (x * x - x2) % p != 0:
        x = x * modp_sqrt_m1 % p
    if (x & 1) != sign:
        x = p - x
    return x


g_y = 4 * modp_inv(5) % p
g_x = recover_x(g_y, 0)
G = (g_x, g_y, 1, g_x * g_y % p)


def point_compress(P):
    zinv = modp_inv(P[2])
    x = P[0] * zinv % p
    y = P[1] * zinv % p
    return int.to_bytes(y | ((x & 1) << 255), 32, "little")


def secret_expand(secret):
    h = sha512(secret)
    a = int.from_bytes(h[:32], "little")
    a &= (1 << 254) - 8
    a |= 1 << 254
    return a, h[32:]


def public_of(secret):
    a, _ = secret_expand(secret)
    return point_compress(point_mul(a, G))


def sha512_modq(s):
    return int.from_bytes(sha512(s), "little") % q


def sign(secret, msg):
    a, prefix = secret_expand(secret)
    A = point_compress(point_mul(a, G))
    r = sha512_modq(prefix + msg)
    Rs = point_compress(point_mul(r, G))
    s = (r + sha512_modq(Rs + A + msg) * a) % q
    return Rs + int.to_bytes(s, 32, "little")


given = json.load(sys.stdin)
seed = bytes.fromhex(given["seed_hex"])
public = public_of(seed)
name = "interlock-" + given["key_id"]
key_hash = hashlib.sha256(name.encode() + b"\n" + b"\x01" + public).digest()[:4]
vkey = name + "+" + key_hash.hex() + "+" + base64.b64encode(b"\x01" + public).decode()
body = given["origin"] + "\n" + str(given["size"]) + "\n" + base64.b64encode(bytes.fromhex(given["head"])).decode() + "\n"
signature = sign(seed, body.encode())
note = body + "\n" + "\u2014 " + name + " " + base64.b64encode(key_hash + signature).decode() + "\n"
print(json.dumps({
    "public_hex": public.hex(),
    "key_name": name,
    "key_hash_hex": key_hash.hex(),
    "vkey": vkey,
    "body": body,
    "note": note,
    "rfc8032_test1_empty": sign(seed, b"").hex(),
}))
