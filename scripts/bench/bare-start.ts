// The start-up baseline, compiled by the bench like linkbox: `version` prints and exits; `serve --config
// FILE` reads the port from FILE's `port = N` line and answers /healthz. What a compiled Bun program costs
// before any of linkbox's own work.
const [command, , configPath] = Bun.argv.slice(2)
if (command === 'version') console.log('0.0.0')
else if (command === 'serve' && configPath) {
  const port = Number((await Bun.file(configPath).text()).match(/^port = (\d+)/m)?.[1] ?? 0)
  const server = Bun.serve({ hostname: '127.0.0.1', port, fetch: () => Response.json({ status: 'ok' }) })
  console.log(`listening on http://127.0.0.1:${server.port}`)
} else process.exit(2)
export {}
