#!/usr/bin/env bun
// `bun run bench`: throughput figures as ratios against a baseline measured in the same run, never as
// absolute targets (the machine is shared and noisy). Needs wrk (Debian package `wrk`).
import { hasWrk } from './bench/wrk'
import { benchDistinctUa } from './bench/distinct-ua'
import { benchQr } from './bench/qr'
import { benchRedirect } from './bench/redirect'
import { benchUnwritable } from './bench/unwritable'

if (!hasWrk()) {
  console.error('bench: wrk is not installed (apt-get install -y wrk)')
  process.exit(2)
}
const sections: [string, () => Promise<string[]>][] = [
  ['Redirect /<code> against a bare Bun.serve 302', benchRedirect],
  ['Redirect with distinct 1 KB user agents against one repeated user agent', benchDistinctUa],
  ['QR: cached public image against the redirect; qr.json renderings', benchQr],
  ['Redirects while the database cannot be written, against a writable one', benchUnwritable],
]
const only = process.argv[2]
for (const [title, run] of sections) {
  if (only && !title.toLowerCase().includes(only.toLowerCase())) continue
  console.log(`\n## ${title}`)
  for (const line of await run()) console.log(line)
}
