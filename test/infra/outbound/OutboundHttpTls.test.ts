import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { OutboundHttp } from "../../../infra/outbound/OutboundHttp.ts"
import { makeSelfSignedCert, startServer } from "../support/LocalServer.ts"

const tls = makeSelfSignedCert()
const moduleUrl = new URL("../../../infra/outbound/OutboundHttp.ts", import.meta.url).href

/** Runs one request from a fresh Node process, whose trust store is fixed at start-up. */
const requestFromChild = (url: string, env: NodeJS.ProcessEnv) =>
  Effect.promise(() =>
    new Promise<string>((resolve) => {
      const script = `
        import { Effect } from "effect"
        import { OutboundHttp } from ${JSON.stringify(moduleUrl)}
        const program = Effect.scoped(Effect.gen(function*() {
          const http = yield* OutboundHttp.make({ allowPrivateNetworks: true })
          return yield* http.request({ method: "GET", url: ${JSON.stringify(url)}, timeoutMs: 5000, maxBodyBytes: 100 })
        }))
        const result = await Effect.runPromise(Effect.result(program))
        process.stdout.write(result._tag === "Success" ? "status:" + result.success.status : "error:" + result.failure.reason)
      `
      execFile(process.execPath, ["--input-type=module", "-e", script], {
        cwd: fileURLToPath(new URL("../../..", import.meta.url)),
        env: { ...process.env, ...env }
      }, (_error, stdout, stderr) => resolve(stdout === "" ? `stderr:${stderr}` : stdout))
    })
  )

describe("OutboundHttp over TLS", () => {
  it.live("refuses a self-signed certificate that is not trusted", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_req, res) => res.end("secure"), tls)
      const http = yield* OutboundHttp.make({ allowPrivateNetworks: true })
      const error = yield* Effect.flip(http.request({ method: "GET", url: server.url, timeoutMs: 5_000, maxBodyBytes: 100 }))
      assert.strictEqual(error.reason, "tls_error")
    }))

  it.live("trusts a certificate passed as ca", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_req, res) => res.end("secure"), tls)
      const http = yield* OutboundHttp.make({ allowPrivateNetworks: true, ca: tls.cert })
      const response = yield* http.request({ method: "GET", url: server.url, timeoutMs: 5_000, maxBodyBytes: 100 })
      assert.strictEqual(new TextDecoder().decode(response.body), "secure")
    }))

  it.live("trusts NODE_EXTRA_CA_CERTS set at process start, and only then", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_req, res) => res.end("secure"), tls)
      const withExtra = yield* requestFromChild(server.url, { NODE_EXTRA_CA_CERTS: tls.certPath })
      const without = yield* requestFromChild(server.url, { NODE_EXTRA_CA_CERTS: "" })
      assert.strictEqual(withExtra, "status:200")
      assert.strictEqual(without, "error:tls_error")
    }), { timeout: 30_000 })
})
