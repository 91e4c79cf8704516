import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { listTools } from "../../../domain/catalog/index.ts"
import { configLayer } from "../../support/Config.ts"
import { OutboundHttp } from "../../../infra/outbound/OutboundHttp.ts"
import { Adapters, layerOver, makeAdapters } from "../../../infra/providers/index.ts"
import { demoAdapters } from "../../../infra/providers/DemoAdapters.ts"
import { adapterContext } from "../support/AdapterContext.ts"
import { json, startServer } from "../support/LocalServer.ts"

describe("Adapters", () => {
  it.live("maps every catalog tool to its adapter, with provider URLs from the configuration", () =>
    Effect.gen(function*() {
      const slack = yield* startServer((req, res) =>
        req.path === "/api/chat.postMessage" ? json(res, 200, { ok: true, channel: "C1", ts: "1.2" }) : json(res, 404, {})
      )
      const config = configLayer({ SERVICE_SLACK_API_URL: `${slack.url}/api` })
      const posted = yield* Effect.gen(function*() {
        const adapters = yield* Adapters
        for (const tool of listTools()) assert.strictEqual(adapters.get(tool.name)?.tool, tool.name)
        assert.isUndefined(adapters.get("demo.unknown"))
        const slackAdapter = adapters.get("slack.post_message")
        if (slackAdapter === undefined) return assert.fail("no slack adapter")
        return yield* slackAdapter.run({ channel: "C1", text: "hi" }, adapterContext({ credentials: { token: "xoxb-1" } }))
      }).pipe(Effect.provide(layerOver.pipe(Layer.provide(OutboundHttp.layer), Layer.provide(config))))
      assert.deepStrictEqual(posted, { channel: "C1", ts: "1.2" })
      assert.strictEqual(slack.requests[0]?.headers.authorization, "Bearer xoxb-1")
    }))

  it("refuses a registry that does not match the catalog", () => {
    assert.throws(() => makeAdapters(demoAdapters), /missing \[http.request, slack.post_message, github.create_issue\]/)
  })
})
