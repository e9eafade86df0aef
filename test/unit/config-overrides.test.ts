// The command line over the config (issue 38, item 11): serve --port/--host/--data, and the base URL that follows
// the port when no base_url is set (but not one the file sets, nor port 0, whose port is known only later).
import { afterAll, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { loadConfig } from '../../src/kernel/config'
import { removeDir, tempDir } from '../support/server'

const dir = tempDir('linkbox-overrides-')
afterAll(() => removeDir(dir))
const file = (name: string, text: string) => {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}

test('no file: the port and the host make the base URL; the data directory is the working directory’s', () => {
  expect(loadConfig(undefined, { port: 9000 }).server).toMatchObject({ port: 9000, base_url: 'http://localhost:9000' })
  expect(loadConfig(undefined, { port: 9000, host: '127.0.0.1' }).server.base_url).toBe('http://127.0.0.1:9000')
  expect(loadConfig(undefined, { port: 9000, host: '::1' }).server.base_url).toBe('http://[::1]:9000')
  expect(loadConfig(undefined, { port: 9000, host: '::' }).server.base_url).toBe('http://localhost:9000')
  expect(loadConfig(undefined, { port: 0 }).server.base_url).toBe('http://localhost:8080')
  expect(loadConfig(undefined).server.base_url).toBe('http://localhost:8080')
  expect(loadConfig(undefined, { data_dir: 'here' }).data_dir).toBe(resolve('here'))
})

test('a file: its base_url is kept; without one, the base URL follows the port, the file’s or the option’s', () => {
  const set = file('set.toml', '[server]\nport = 7000\nbase_url = "https://s.example"\n')
  expect(loadConfig(set, { port: 9000 }).server).toMatchObject({ port: 9000, base_url: 'https://s.example' })
  const portOnly = file('port.toml', 'data_dir = "state"\n[server]\nport = 7000\n')
  expect(loadConfig(portOnly).server.base_url).toBe('http://localhost:7000')
  expect(loadConfig(portOnly, { port: 9000 }).server.base_url).toBe('http://localhost:9000')
  // The file's data_dir is relative to the file; --data to the working directory.
  expect(loadConfig(portOnly).data_dir).toBe(join(dir, 'state'))
  expect(loadConfig(portOnly, { data_dir: 'elsewhere' }).data_dir).toBe(resolve('elsewhere'))
})

test('--smtp-port sets mail.smtp_port over the file’s, keeping its other mail settings; 0 is no SMTP', () => {
  expect(loadConfig(undefined).mail.smtp_port).toBe(2525)
  expect(loadConfig(undefined, { smtp_port: 0 }).mail.smtp_port).toBe(0)
  const mail = file('mail.toml', '[mail]\nsmtp_port = 2600\nsmtp_host = "127.0.0.1"\n')
  expect(loadConfig(mail, { smtp_port: 2700 }).mail).toMatchObject({ smtp_port: 2700, smtp_host: '127.0.0.1' })
})
