// The QR rendering thread (see renderer.ts): settings in, image or error out; what only the encoder can tell comes
// back as the AppError's fields, for the main thread to raise as the same 400.
import { AppError, internalError } from '../kernel/errors'
import type { RenderFailure, RenderReply, RenderRequest } from './renderer'
import { renderQr } from './service'

declare var self: Worker

function failure(err: unknown): RenderFailure {
  if (!(err instanceof AppError)) console.error('qr: rendering failed:', err)
  const { status, code, message } = err instanceof AppError ? err : internalError()
  return { status, code, message }
}

self.onmessage = async ({ data: { id, settings } }: MessageEvent<RenderRequest>) => {
  try {
    const image = await renderQr(settings)
    // Transferred, not copied: the main thread has no need to spend time on a copy.
    self.postMessage({ id, image } satisfies RenderReply, [image.body.buffer])
  } catch (err) {
    self.postMessage({ id, error: failure(err) } satisfies RenderReply)
  }
}
