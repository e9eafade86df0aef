// libwebp's decoder as a file of the build: `bun build --compile` embeds it, and the worker reads it from there.
import wasm from '@jsquash/webp/codec/dec/webp_dec.wasm' with { type: 'file' }

export default wasm as unknown as string
