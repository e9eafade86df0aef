// The baseline for mail: the same smtp-server package and version as linkbox, set up as linkbox sets it up
// (no AUTH, no STARTTLS, a size advertised), that accepts every recipient, reads each message to its end
// and answers 250 without keeping anything. What the SMTP dialogue alone costs, in a process of its own
// like `linkbox serve`, so both are measured alike. Prints "bare SMTP on 127.0.0.1:PORT".
import { SMTPServer } from 'smtp-server'

const server = new SMTPServer({
  name: 'bare.test',
  banner: 'bare',
  logger: false,
  size: 10 * 1024 * 1024,
  authOptional: true,
  disabledCommands: ['AUTH', 'STARTTLS'],
  maxClients: 200,
  socketTimeout: 60_000,
  onData(stream, _session, callback) {
    stream.on('data', () => {})
    stream.on('end', () => callback(null, '2.0.0 OK: discarded'))
    stream.on('error', (err) => callback(err))
  },
})
server.on('error', () => {})
server.listen(0, '127.0.0.1', () => {
  const address = server.server.address()
  console.log(`bare SMTP on 127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`)
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
