// Preloaded by scripts/test-tiers.sh: argon2id at 1 MiB and one pass instead of Bun's 64 MiB and two (0.2-1 s a hash
// on the 2-core CI). Same algorithm, real verify; src/, the binary and child processes keep the production cost.
const real = Bun.password.hash.bind(Bun.password)
const CHEAP = { algorithm: 'argon2id', memoryCost: 1024, timeCost: 1 } as const

Bun.password.hash = ((password: Parameters<typeof real>[0], algorithm?: Parameters<typeof real>[1]) =>
  real(password, algorithm === undefined || algorithm === 'argon2id' ? CHEAP : algorithm)) as typeof Bun.password.hash
