import { assert, describe, it } from "@effect/vitest"
import Ajv2020 from "ajv/dist/2020.js"
import { Github, Slack } from "../../../domain/catalog/index.ts"

const ajv = new Ajv2020.default({ strict: true })

describe("slack.message_posted normalization", () => {
  const event = {
    type: "message",
    channel: "C024BE91L",
    user: "U2147483697",
    text: "Live long and prosper.",
    ts: "1355517523.000005",
    event_ts: "1355517523.000005",
    channel_type: "channel"
  }

  it("keeps channel, user, text and ts of a user message, matching the payload schema", () => {
    const payload = Slack.normalizeMessageEvent(event)
    assert.deepStrictEqual(payload, { channel: "C024BE91L", user: "U2147483697", text: "Live long and prosper.", ts: "1355517523.000005" })
    assert.isTrue(ajv.validate(Slack.messagePosted.payloadSchema, payload))
    assert.isDefined(Slack.normalizeMessageEvent({ ...event, subtype: "thread_broadcast" }))
  })

  it("ignores other events, edits, deletions and bot posts", () => {
    for (const other of [
      { ...event, type: "reaction_added" },
      { ...event, subtype: "message_changed" },
      { ...event, subtype: "message_deleted" },
      { ...event, subtype: "bot_message" },
      { ...event, bot_id: "B1" },
      { ...event, user: undefined },
      { ...event, channel: 5 },
      null,
      "message"
    ]) {
      assert.isUndefined(Slack.normalizeMessageEvent(other), JSON.stringify(other))
    }
  })

  it("matches filters on channel and user", () => {
    const payload = { channel: "C1", user: "U1", text: "", ts: "1.0" }
    assert.isTrue(Slack.matchesMessageFilters(payload, {}))
    assert.isTrue(Slack.matchesMessageFilters(payload, { channel: "C1", user: "U1" }))
    assert.isFalse(Slack.matchesMessageFilters(payload, { channel: "C2" }))
    assert.isFalse(Slack.matchesMessageFilters(payload, { user: "U2" }))
  })
})

describe("github.issue_opened normalization", () => {
  const issue = {
    id: 1,
    number: 1347,
    title: "Found a bug",
    html_url: "https://github.com/octocat/Hello-World/issues/1347",
    user: { login: "octocat" },
    labels: [{ name: "bug" }, "p1"],
    created_at: "2011-04-22T13:33:48Z",
    state: "open"
  }

  it("builds the payload from a REST issue, matching the payload schema", () => {
    const payload = Github.normalizeIssue("octocat", "Hello-World", issue)
    assert.deepStrictEqual(payload, {
      owner: "octocat",
      repo: "Hello-World",
      id: 1,
      number: 1347,
      title: "Found a bug",
      url: "https://github.com/octocat/Hello-World/issues/1347",
      user: "octocat",
      labels: ["bug", "p1"],
      createdAt: "2011-04-22T13:33:48Z"
    })
    assert.isTrue(ajv.validate(Github.issueOpened.payloadSchema, payload))
  })

  it("skips pull requests and malformed entries", () => {
    assert.isUndefined(Github.normalizeIssue("o", "r", { ...issue, pull_request: { url: "x" } }))
    assert.isUndefined(Github.normalizeIssue("o", "r", { ...issue, number: "1347" }))
    assert.isUndefined(Github.normalizeIssue("o", "r", null))
  })

  it("matches owner and repo case-insensitively and requires every filter label", () => {
    const payload = Github.normalizeIssue("octocat", "Hello-World", issue)
    if (payload === undefined) return assert.fail("no payload")
    assert.isTrue(Github.matchesIssueFilters(payload, { owner: "OctoCat", repo: "hello-world" }))
    assert.isTrue(Github.matchesIssueFilters(payload, { owner: "octocat", repo: "Hello-World", labels: ["bug", "p1"] }))
    assert.isFalse(Github.matchesIssueFilters(payload, { owner: "octocat", repo: "Hello-World", labels: ["bug", "p2"] }))
    assert.isFalse(Github.matchesIssueFilters(payload, { owner: "octocat", repo: "other" }))
  })

  it("matches labels case-insensitively, as GitHub names them (a repository cannot hold both bug and Bug)", () => {
    const payload = Github.normalizeIssue("octocat", "Hello-World", { ...issue, labels: [{ name: "Bug" }, { name: "P1" }] })
    if (payload === undefined) return assert.fail("no payload")
    assert.deepStrictEqual(payload.labels, ["Bug", "P1"])
    assert.isTrue(Github.matchesIssueFilters(payload, { owner: "octocat", repo: "Hello-World", labels: ["bug", "p1"] }))
    assert.isTrue(Github.matchesIssueFilters(payload, { owner: "octocat", repo: "Hello-World", labels: ["BUG"] }))
    assert.isFalse(Github.matchesIssueFilters(payload, { owner: "octocat", repo: "Hello-World", labels: ["bugs"] }))
  })
})
