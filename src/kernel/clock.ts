// Wall-clock milliseconds of a performance.now() stamp the caller already took: a clock read is a system call
// on some machines (~100–200 ns on the bench's VM), and the request line's time needs none of its own.

/** Date.now() − performance.now(), as sampled: within a millisecond below the true offset. */
let offset = Number.NaN
let sampledAt = Number.NEGATIVE_INFINITY

/** Samples the offset again (at most once a second). */
function sample() {
  const at = performance.now()
  // Date.now() counts whole ms, so each sample is up to 1 ms below the true offset: the highest of them is
  // kept, decaying slowly so that it follows drift; a clock stepped back or forward is followed at once.
  const seen = Date.now() - at
  const held = offset - 0.05
  offset = Number.isNaN(held) || seen > held || seen < held - 2 ? seen : held
  sampledAt = at
}

/** The Date.now() of the moment `stamp` (a recent performance.now() value). */
export function wallOf(stamp: number): number {
  if (stamp - sampledAt >= 1000) sample()
  return Math.floor(stamp + offset)
}
