// What SQLite mode keeps outside the database and PostgreSQL mode inside it: the messages' bytes (into mail_bodies,
// hashed chunk by chunk on both sides) and the signing key (into secrets).
import type { SQL } from 'bun'
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { Refusal } from './archive'
import { BODY_PART, CHUNK_BYTES, RAW_PART, writeBodyFile, writeBodyPart } from '../mail/storage/postgres'
import { SIGNING_SECRET_NAME } from '../db/postgres/signing'
import { SECRET_BYTES } from '../kernel/signing'
import type { Db } from '../db/sqlite/index'
import type { CopyResult } from './copy-tables'

/** sha256 of each CHUNK_BYTES slice of a part (as writeBodyPart / writeBodyFile cut it), in order, with the slice sizes. */
async function chunkHashes(source: Uint8Array | string): Promise<{ sha256: string; size: number }[]> {
  const out: { sha256: string; size: number }[] = []
  const size = typeof source === 'string' ? statSync(source).size : source.length
  const file = typeof source === 'string' ? Bun.file(source) : null
  for (let at = 0; at === 0 || at < size; at += CHUNK_BYTES) {
    const data = file
      ? new Uint8Array(await file.slice(at, at + CHUNK_BYTES).arrayBuffer())
      : (source as Uint8Array).subarray(at, at + CHUNK_BYTES)
    out.push({ sha256: createHash('sha256').update(data).digest('hex'), size: data.length })
  }
  return out
}

/** A message's parts in SQLite mode: part number → its bytes (inline) or the file that holds them. */
function blobParts(db: Db, dataDir: string, blob: string): Map<number, Uint8Array | string> {
  const parts = new Map<number, Uint8Array | string>()
  const inline = db.query('SELECT raw, body FROM mail_inline WHERE blob = ?').get(blob) as {
    raw: Uint8Array
    body: string
  } | null
  if (inline) {
    parts.set(BODY_PART, Buffer.from(inline.body))
    parts.set(RAW_PART, inline.raw)
    for (const p of db.query('SELECT part, data FROM mail_inline_parts WHERE blob = ? ORDER BY part').all(blob) as {
      part: number
      data: Uint8Array
    }[])
      parts.set(p.part, p.data)
    return parts
  }
  const dir = join(dataDir, 'mail', blob.slice(0, 2), blob)
  if (!/^[0-9a-f]{32}$/.test(blob) || !existsSync(dir))
    throw new Refusal(
      `migrate: the message bytes ${blob} are neither in mail_inline nor in ${dir}: the data_dir is damaged (restore a backup, or delete those messages first)`,
    )
  for (const name of readdirSync(dir)) {
    const n = /^([1-9][0-9]{0,5})\.bin$/.exec(name)?.[1]
    const part = name === 'raw.eml' ? RAW_PART : name === 'body.json' ? BODY_PART : n ? Number(n) : null
    if (part === null)
      throw new Refusal(
        `migrate: ${join(dir, name)} is not a file a message's bytes are made of; this copy does not know where it goes`,
      )
    parts.set(part, join(dir, name))
  }
  for (const [part, file] of [
    [RAW_PART, 'raw.eml'],
    [BODY_PART, 'body.json'],
  ] as const)
    if (!parts.has(part))
      throw new Refusal(
        `migrate: ${join(dir, file)} is missing: the data_dir is damaged (restore a backup, or delete that message first)`,
      )
  return parts
}

/** Every message's bytes into mail_bodies, each blob read back and compared chunk by chunk. */
export async function copyMail(db: Db, tx: SQL, dataDir: string): Promise<CopyResult['mail']> {
  const result = { blobs: 0, parts: 0, chunks: 0, bytes: 0, orphans: 0 }
  const page = db.query('SELECT DISTINCT blob FROM mail_messages WHERE blob > ? ORDER BY blob LIMIT 200')
  for (let last = ''; ; ) {
    const blobs = (page.all(last) as { blob: string }[]).map((r) => r.blob)
    if (blobs.length === 0) break
    for (const blob of blobs) {
      const parts = blobParts(db, dataDir, blob)
      const expected: string[] = []
      for (const [part, source] of [...parts].sort((a, b) => a[0] - b[0])) {
        if (typeof source === 'string') await writeBodyFile(tx, blob, part, source)
        else await writeBodyPart(tx, blob, part, source)
        const hashes = await chunkHashes(source)
        hashes.forEach((h, seq) => expected.push(`${part}/${seq}/${h.size}/${h.sha256}`))
        result.parts++
        result.chunks += hashes.length
        result.bytes += hashes.reduce((n, h) => n + h.size, 0)
      }
      const written =
        await tx`SELECT part, seq, length(data) AS size, encode(sha256(data), 'hex') AS sha256 FROM mail_bodies WHERE blob = ${blob} ORDER BY part, seq`
      const got = (written as { part: number; seq: number; size: number; sha256: string }[]).map(
        (r) => `${r.part}/${r.seq}/${r.size}/${r.sha256}`,
      )
      if (got.join('\n') !== expected.join('\n'))
        throw new Refusal(
          `migrate: the bytes of message ${blob} read back from PostgreSQL differ from data_dir's (${got.length} chunks there, ${expected.length} here)`,
        )
      result.blobs++
    }
    last = blobs[blobs.length - 1]!
  }
  // Bytes no message names (left by a crash; the orphan sweep removes them): not copied, counted.
  const named = db.query('SELECT 1 FROM mail_messages WHERE blob = ? LIMIT 1')
  result.orphans += (
    db
      .query(
        'SELECT count(*) AS n FROM mail_inline i WHERE NOT EXISTS (SELECT 1 FROM mail_messages m WHERE m.blob = i.blob)',
      )
      .get() as { n: number }
  ).n
  const root = join(dataDir, 'mail')
  for (const shard of existsSync(root) ? readdirSync(root) : [])
    if (/^[0-9a-f]{2}$/.test(shard))
      for (const blob of readdirSync(join(root, shard))) if (!named.get(blob)) result.orphans++
  return result
}

/** The signing key of data_dir into secrets; false when there is none (a PostgreSQL node then makes one). */
export async function copySigningKey(tx: SQL, dataDir: string): Promise<boolean> {
  const dir = join(dataDir, 'secrets')
  const names = existsSync(dir) ? readdirSync(dir) : []
  for (const name of names)
    if (name !== 'signing.key')
      throw new Refusal(`migrate: ${join(dir, name)} is not a secret this copy knows; it does not know where it goes`)
  if (!names.includes('signing.key')) return false
  const path = join(dir, 'signing.key')
  const key = readFileSync(path)
  if (key.length < SECRET_BYTES)
    throw new Refusal(`migrate: ${path} is shorter than ${SECRET_BYTES} bytes; it is not a signing key linkbox made`)
  await tx`INSERT INTO secrets (name, value, created) VALUES (${SIGNING_SECRET_NAME}, ${key}, ${Math.floor(statSync(path).mtimeMs)})`
  const [back] = await tx`SELECT value FROM secrets WHERE name = ${SIGNING_SECRET_NAME}`
  if (!Buffer.from(back.value as Uint8Array).equals(key))
    throw new Refusal(`migrate: the signing key read back from PostgreSQL differs from ${path}`)
  return true
}
