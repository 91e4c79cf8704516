/**
 * The demo toolkit's adapters. `demo.sleep` is an interruptible Effect sleep, so cancelling the
 * execution (interrupting `run`) ends it at once; `demo.digest` reads only through the
 * execution-bound file interface, which knows nothing of files not attached to the execution.
 */
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { DigestInput, EchoInput, type FailCode, FailInput, SleepInput } from "../../domain/catalog/Demo.ts"
import { InvalidInput, ProviderError, ProviderUnavailable, RateLimited, Timeout } from "../../domain/Errors.ts"
import type { AdapterFailure, ToolAdapter } from "./Adapter.ts"
import { typedInput } from "./Support.ts"

const decodeEcho = typedInput(EchoInput, "demo.echo")
const decodeSleep = typedInput(SleepInput, "demo.sleep")
const decodeFail = typedInput(FailInput, "demo.fail")
const decodeDigest = typedInput(DigestInput, "demo.digest")

export const echo: ToolAdapter = {
  tool: "demo.echo",
  run: (input) => decodeEcho(input)
}

export const sleep: ToolAdapter = {
  tool: "demo.sleep",
  run: (input) =>
    decodeSleep(input).pipe(
      Effect.tap(({ ms }) => Effect.sleep(ms)),
      Effect.map(({ ms }) => ({ sleptMs: ms }))
    )
}

const failure = (code: FailCode, retryAfter: number | undefined): AdapterFailure => {
  const message = `demo.fail was asked to fail with ${code}`
  switch (code) {
    case "provider_error":
      return new ProviderError({ message })
    case "provider_unavailable":
      return new ProviderUnavailable({ message })
    case "rate_limited":
      return new RateLimited(retryAfter === undefined ? { message } : { message, retryAfter })
    case "timeout":
      return new Timeout({ message })
  }
}

export const fail: ToolAdapter = {
  tool: "demo.fail",
  run: (input) => decodeFail(input).pipe(Effect.flatMap(({ code, retryAfter }) => Effect.fail(failure(code, retryAfter))))
}

export const digest: ToolAdapter = {
  tool: "demo.digest",
  run: Effect.fnUntraced(function*(input, context) {
    const { fileId } = yield* decodeDigest(input)
    // Not attached, or expired before the execution read it: the reader says which.
    const file = yield* context.files.read(fileId).pipe(
      Effect.catchTag("NotFound", (error) => Effect.fail(new InvalidInput({ message: error.message })))
    )
    const sha256 = createHash("sha256").update(file.bytes).digest("hex")
    return { sha256, size: file.bytes.byteLength }
  })
}

export const demoAdapters: ReadonlyArray<ToolAdapter> = [echo, sleep, fail, digest]
