// What a check of `linkbox doctor` finds: FAIL stops the service, warn is worth knowing, skip could not run.
export type Verdict = 'ok' | 'warn' | 'FAIL' | 'skip'
export interface Finding {
  verdict: Verdict
  what: string
  detail: string
}

/** Bytes as the findings show them: KiB, MiB or GiB. */
export const size = (bytes: number) =>
  bytes >= 2 ** 30
    ? `${(bytes / 2 ** 30).toFixed(1)} GiB`
    : bytes >= 2 ** 20
      ? `${(bytes / 2 ** 20).toFixed(1)} MiB`
      : `${(bytes / 1024).toFixed(1)} KiB`
