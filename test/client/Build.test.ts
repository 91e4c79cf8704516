/**
 * The published package: `client/tsconfig.build.json` (what `npm run build:client` runs) builds
 * into a temporary `node_modules/@service/client/dist`, next to `client/package.json`, and a plain
 * `node` process imports the package by its name, through its `exports` map, as a consumer would;
 * a consumer's TypeScript resolves its declarations the same way.
 */
import { execFileSync } from "node:child_process"
import { createHmac } from "node:crypto"
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..")
const TSC = join(ROOT, "node_modules/typescript/bin/tsc")

interface PackageJson {
  readonly name: string
  readonly version: string
  readonly type: string
  readonly exports: { readonly ".": { readonly types: string; readonly import: string } }
}

const readPackage = (): PackageJson => JSON.parse(readFileSync(join(ROOT, "client/package.json"), "utf8")) as PackageJson

/** Runs `node` (this process's binary, no loader, no type stripping of ours) in `cwd`. */
const node = (cwd: string, script: string): string =>
  execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd, encoding: "utf8" })

describe("the client package build", () => {
  let consumer: string
  let packageDir: string
  beforeAll(() => {
    consumer = mkdtempSync(join(tmpdir(), "client-build-"))
    packageDir = join(consumer, "node_modules/@service/client")
    mkdirSync(packageDir, { recursive: true })
    copyFileSync(join(ROOT, "client/package.json"), join(packageDir, "package.json"))
    // The peer dependency and Node's types, as the consumer's install would provide them.
    symlinkSync(join(ROOT, "node_modules/effect"), join(consumer, "node_modules/effect"), "dir")
    symlinkSync(join(ROOT, "node_modules/@types"), join(consumer, "node_modules/@types"), "dir")
    execFileSync(process.execPath, [TSC, "-p", join(ROOT, "client/tsconfig.build.json"), "--outDir", join(packageDir, "dist")], {
      cwd: ROOT,
      encoding: "utf8"
    })
  })
  afterAll(() => rmSync(consumer, { recursive: true, force: true }))

  it("client/package.json describes @service/client 0.1.0, an ES module whose exports exist in the build", () => {
    const pkg = readPackage()
    expect(pkg).toMatchObject({ name: "@service/client", version: "0.1.0", type: "module" })
    expect(pkg.exports["."].types).toMatch(/^\.\/dist\/.+\.d\.ts$/)
    expect(pkg.exports["."].import).toMatch(/^\.\/dist\/.+\.js$/)
    expect(existsSync(join(packageDir, pkg.exports["."].types))).toBe(true)
    expect(existsSync(join(packageDir, pkg.exports["."].import))).toBe(true)
    // What the client imports from the domain and the contracts is built with it.
    for (const file of ["domain/Errors.js", "http/api/WebhooksApi.js", "http/api/SubscriptionsApi.d.ts", "client/Webhooks.d.ts"]) {
      expect(existsSync(join(packageDir, "dist", file)), file).toBe(true)
    }
    expect(readFileSync(join(packageDir, "dist/client/index.js"), "utf8")).not.toMatch(/from "[^"]+\.ts"/)
  })

  it("plain node imports @service/client: createClient works over a given fetch, verifyWebhook verifies", () => {
    const secret = "whsec_build_test_0123456789"
    const body = JSON.stringify({ id: "evt_1", type: "execution.succeeded" })
    const timestamp = Math.floor(Date.now() / 1000)
    const signature = `v1=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`
    const headers = { "service-webhook-id": "evt_1", "service-webhook-timestamp": String(timestamp), "service-webhook-signature": signature }
    const output = node(consumer, `
      const client = await import("@service/client")
      const fetch = async () => new Response(JSON.stringify({ projectId: "proj_1", keyId: "key_1" }), { status: 200 })
      const me = await client.createClient({ baseUrl: "https://service.example", apiKey: "k", fetch }).me()
      const verified = client.verifyWebhook(${JSON.stringify(secret)}, ${JSON.stringify(headers)}, ${JSON.stringify(body)})
      const forged = client.verifyWebhook("whsec_other", ${JSON.stringify(headers)}, ${JSON.stringify(body)})
      console.log(JSON.stringify({
        createClient: typeof client.createClient,
        verifyWebhook: typeof client.verifyWebhook,
        makeServiceClient: typeof client.makeServiceClient,
        serviceError: typeof client.ServiceError,
        me,
        verified,
        forged
      }))
    `)
    expect(JSON.parse(output)).toEqual({
      createClient: "function",
      verifyWebhook: "function",
      makeServiceClient: "function",
      serviceError: "function",
      me: { projectId: "proj_1", keyId: "key_1" },
      verified: { ok: true, eventId: "evt_1", timestamp },
      forged: { ok: false, reason: "bad_signature" }
    })
  })

  it("a TypeScript consumer gets the declarations through the exports map", () => {
    writeFileSync(join(consumer, "package.json"), JSON.stringify({ type: "module" }))
    writeFileSync(join(consumer, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        target: "ES2024",
        lib: ["ES2024", "DOM"],
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        noEmit: true,
        types: ["node"],
        skipLibCheck: true
      },
      files: ["consumer.ts"]
    }))
    // The @ts-expect-error lines prove the types are real: were they `any`, tsc would refuse them.
    writeFileSync(join(consumer, "consumer.ts"), `
      import { createClient, type ServiceError, verifyWebhook, type WebhookEndpoint } from "@service/client"
      const client = createClient({ baseUrl: "https://service.example", apiKey: "k" })
      export const endpoint: Promise<WebhookEndpoint> = client.webhooks.get("whe_1")
      export const result: boolean = verifyWebhook("whsec_x", {}, "").ok
      export const code = (error: ServiceError): string => error.code
      // @ts-expect-error ids are strings
      void client.webhooks.get(42)
      // @ts-expect-error me answers an object
      export const wrong: Promise<number> = client.me()
    `)
    execFileSync(process.execPath, [TSC, "-p", consumer], { cwd: consumer, encoding: "utf8" })
  })
})
