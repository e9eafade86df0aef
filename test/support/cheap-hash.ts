// Preloaded by scripts/test-tiers.sh: passwords hashed in tests use argon2id at a small cost (1 MiB, one pass)
// instead of Bun's default (64 MiB, two passes), which took 0.2–1 s a hash on a loaded 2-core CI machine, hundreds
// of times a run. Only the cost changes: the algorithm and Bun.password.verify stay the real ones (a hash names its
// own cost), the app's code is untouched, and the built binary and child processes keep the production cost.
const real = Bun.password.hash.bind(Bun.password)
const CHEAP = { algorithm: 'argon2id', memoryCost: 1024, timeCost: 1 } as const

Bun.password.hash = ((password: Parameters<typeof real>[0], algorithm?: Parameters<typeof real>[1]) =>
  real(password, algorithm === undefined || algorithm === 'argon2id' ? CHEAP : algorithm)) as typeof Bun.password.hash
