// The router behind the pipeline's hot routes: Elysia's compiled handler over the API and every feature's
// routes, with the app's fault answer for what they throw.
import { Elysia, type AnyElysia } from 'elysia'
import type { createApi } from './api'

export function createRouter(
  api: ReturnType<typeof createApi>,
  routes: readonly AnyElysia[],
  answerFault: (error: unknown, request: Request, code?: string) => Response,
) {
  const router = new Elysia({ name: 'linkbox' })
    .onError(({ code, error, request }) => answerFault(error, request, String(code)))
    // A Host shorter than four characters ("nas") makes Elysia's router read the path from the wrong
    // slash (see api.ts dispatch); /api requests with such a Host are answered by their real path.
    .onRequest(({ request }) => {
      const url = request.url
      const slash = url.indexOf('/', url.indexOf('://') + 3)
      if (slash > 0 && slash < 11 && url.startsWith('/api', slash)) return api.dispatch(request)
    })
    .use(api.plugin)
  for (const r of routes) router.use(r)
  return router
}
