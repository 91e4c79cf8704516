/**
 * A 1 GiB upload to POST /v1/files, chunked and with a Content-Length, against a real service
 * process with the default 25 MiB cap: refused with 413 once the body passes the ceiling
 * (4*ceil(cap/3) + 16 KiB), while the service's memory stays flat. The body comes from a
 * generator, so the test never holds it either. Figures are printed, timings not asserted.
 */
import { request } from "node:http"
import { readFileSync } from "node:fs"
import { freePort } from "../support/Ports.ts"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ChildService, KEY, startProcess } from "../support/Service.ts"

const GIB = 1024 ** 3
const MIB = 1024 ** 2
const CAP = 26_214_400
const CEILING = 4 * Math.ceil(CAP / 3) + 16 * 1024
// What may sit in socket buffers between the client's writes and the server's reads on loopback.
const SOCKET_SLACK = 32 * MIB


const mib = (n: number) => `${(n / MIB).toFixed(1)} MiB`

const status = (pid: number, field: "VmRSS" | "VmHWM"): number => {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"))
  return Number(match?.[1] ?? NaN) * 1024
}

/** A JSON upload body of `total` bytes, produced 64 KiB at a time. */
function* hugeBody(total: number): Generator<Buffer> {
  const head = Buffer.from(`{"name":"huge.bin","content":"`)
  const chunk = Buffer.alloc(64 * 1024, "A")
  yield head
  let sent = head.length
  while (sent < total - 2) {
    const part = Math.min(chunk.length, total - 2 - sent)
    yield part === chunk.length ? chunk : chunk.subarray(0, part)
    sent += part
  }
  yield Buffer.from(`"}`)
}

interface Outcome {
  readonly status: number | undefined
  /** Bytes the client handed to its socket before the connection ended or the body ran out. */
  readonly written: number
}

/** Writes the body with backpressure until it is done or the server closes the connection. */
const send = (port: number, withLength: boolean): Promise<Outcome> =>
  new Promise((resolve) => {
    let written = 0
    let statusCode: number | undefined
    let settled = false
    const headers: Record<string, string> = { authorization: `Bearer ${KEY}`, "content-type": "application/json" }
    if (withLength) headers["content-length"] = String(GIB)
    const req = request({ host: "127.0.0.1", port, path: "/v1/files", method: "POST", headers })
    const finish = () => {
      if (settled) return
      settled = true
      req.destroy()
      resolve({ status: statusCode, written })
    }
    req.on("response", (res) => {
      statusCode = res.statusCode
      res.resume()
      // Keep writing after the answer: a server that drained the rest would let all of it through.
      res.on("end", () => setTimeout(finish, 200))
    })
    req.on("error", finish)
    req.on("close", finish)
    const body = hugeBody(GIB)
    const pump = (): void => {
      // `settled` flips in event handlers, which run only between calls of pump.
      for (;;) {
        if (settled) return
        const next = body.next()
        if (next.done === true) return void req.end()
        written += next.value.length
        if (!req.write(next.value)) return void req.once("drain", pump)
      }
    }
    pump()
  })

describe("POST /v1/files body ceiling", () => {
  let service: ChildService
  let port: number

  beforeAll(async () => {
    port = await freePort()
    service = await startProcess({}, port)
    // Warm up: a real upload of 1 MiB, so code paths are loaded before the baseline.
    const warm = await service.fetch("/v1/files", {
      method: "POST",
      json: { name: "warm.bin", content: Buffer.alloc(MIB, 1).toString("base64") }
    })
    expect(warm.status).toBe(201)
  }, 60_000)
  afterAll(async () => {
    await service?.stop()
  })

  it("refuses 1 GiB uploads with 413 after reading about the ceiling, with flat memory", async () => {
    const pid = service.process.pid ?? 0
    const rssBefore = status(pid, "VmRSS")
    const peakBefore = status(pid, "VmHWM")
    const chunked = await send(port, false)
    const declared = await send(port, true)
    await new Promise((resolve) => setTimeout(resolve, 500))
    const rssAfter = status(pid, "VmRSS")
    const peakAfter = status(pid, "VmHWM")
    process.stdout.write(
      `[files 1 GiB upload] ceiling ${mib(CEILING)}; chunked: ${chunked.status}, client wrote ${mib(chunked.written)}; ` +
        `Content-Length: ${declared.status}, client wrote ${mib(declared.written)}; service RSS ${mib(rssBefore)} -> ${mib(rssAfter)} ` +
        `(delta ${mib(rssAfter - rssBefore)}), peak RSS ${mib(peakBefore)} -> ${mib(peakAfter)}\n`
    )
    expect(chunked.status).toBe(413)
    expect(declared.status).toBe(413)
    expect(chunked.written).toBeLessThan(CEILING + SOCKET_SLACK)
    expect(declared.written).toBeLessThan(SOCKET_SLACK)
    // Holding the ceiling's worth of chunks is expected; anything near the 1 GiB offered is not.
    expect(peakAfter - rssBefore).toBeLessThan(3 * CEILING)
    // The service still answers.
    expect((await service.fetch("/v1/files")).status).toBe(200)
  }, 120_000)
})
