// A webhook deliverer as a process of its own on a PostgreSQL database (test/webhook-nodes.test.ts): a
// "node" the test can SIGKILL while its requests are in flight. Arguments: the database URL, the lease (ms).
// It may send to 127.0.0.1 (the test's receiver); it prints "started" once its deliverer runs.
import { postgresAuditRows } from '../../src/audit/storage/postgres'
import { pgClient } from '../../src/db/postgres'
import { createDeliverer } from '../../src/webhooks/deliverer'
import { postgresWebhookQueue } from '../../src/webhooks/storage/postgres'
import { testConfig } from './app'
import { tmpdir } from 'node:os'

const [url, lease] = process.argv.slice(2)
if (!url || !lease) throw new Error('usage: deliverer-node.ts <database url> <lease ms>')
const sql = pgClient(url, { max: 4 })
const deliverer = createDeliverer({
  queue: postgresWebhookQueue(sql),
  audit: postgresAuditRows(sql),
  config: testConfig(tmpdir(), { media: { allow_private_networks: true } }),
  clock: Date.now,
  leaseMs: Number(lease),
  log: (line, err) => console.error(line, err ?? ''),
})
deliverer.start()
console.log('started')
// Runs until it is killed.
setInterval(() => {}, 60_000)
