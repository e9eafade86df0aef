// A signature or token changed for sure: its first character replaced by another. Replacing its last ones with
// fixed text ("…AA") leaves it as it was when it already ended so (1 in 1,024 for a base64url HMAC, whose last
// character takes one of 16 values) — which made a tamper test fail in CI.
export const tampered = (text: string): string => (text.startsWith('A') ? 'B' : 'A') + text.slice(1)
