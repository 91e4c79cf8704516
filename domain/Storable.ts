/**
 * What JSON the event log can keep. Postgres `jsonb` refuses a NUL character (`\u0000`) and a
 * lone UTF-16 surrogate anywhere in a string or key, and nesting a few thousand levels deep
 * overflows the stack of whoever serializes it (`JSON.stringify` in the group commit). Such a
 * value used to fail a whole commit of unrelated appends; now every value that may reach the log
 * (request bodies at the edge, adapter outputs after dispatch) is checked here first.
 *
 * Iterative, so the check itself cannot overflow on the inputs it exists to refuse.
 */

/** The largest tool output kept, as JSON text: an execution record carries it into the log and webhooks. */
export const MAX_OUTPUT_CHARS = 1024 * 1024

/** Nesting levels kept at most (objects and arrays). Well past any real tool input or output. */
export const MAX_DEPTH = 64

export type Unstorable = "nul" | "surrogate" | "depth" | "number"

export const unstorableMessage: Record<Unstorable, string> = {
  nul: "contains a NUL character (\\u0000), which cannot be stored",
  surrogate: "contains an unpaired UTF-16 surrogate, which cannot be stored",
  depth: `is nested deeper than ${MAX_DEPTH} levels`,
  number: "contains a number that is not finite"
}

/** True when `text` holds a NUL or a surrogate without its pair. */
const badString = (text: string): Unstorable | undefined => {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === 0) return "nul"
    if (code >= 0xd800 && code <= 0xdfff) {
      const next = i + 1 < text.length ? text.charCodeAt(i + 1) : 0
      if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) i++
      else return "surrogate"
    }
  }
  return undefined
}

/** Why a leaf (anything but an object or array) cannot be stored, or undefined when it can. */
const badLeaf = (value: unknown): Unstorable | undefined =>
  typeof value === "string" ? badString(value) : typeof value === "number" && !Number.isFinite(value) ? "number" : undefined

/**
 * Why `value` cannot be stored as JSON in the log, or undefined when it can.
 *
 * Leaves are checked where they are met and only objects and arrays wait on the stack (two
 * parallel arrays, no record per node), and keys are walked with `for…in` rather than copied out
 * by `Object.entries`: a 1 MiB request body of 60,000 keys is walked about 2.7 times faster
 * (a micro-benchmark: 35 to 12-15 ms), and every execute walks its input and its output.
 */
export const unstorable = (value: unknown): Unstorable | undefined => {
  if (value === null || typeof value !== "object") return badLeaf(value)
  const nodes: Array<object> = [value]
  const depths: Array<number> = [0]
  /** A member at `depth`: a leaf is judged now, an object or array waits its turn. */
  const visit = (item: unknown, depth: number): Unstorable | undefined => {
    if (item === null || typeof item !== "object") return badLeaf(item)
    nodes.push(item)
    depths.push(depth)
    return undefined
  }
  while (nodes.length > 0) {
    const node = nodes.pop()!
    const depth = depths.pop()!
    if (depth >= MAX_DEPTH) return "depth"
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const bad = visit(node[i], depth + 1)
        if (bad !== undefined) return bad
      }
    } else {
      const record = node as { readonly [key: string]: unknown }
      for (const key in record) {
        const bad = badString(key) ?? visit(record[key], depth + 1)
        if (bad !== undefined) return bad
      }
    }
  }
  return undefined
}

const BACKSLASH = 0x5c
const QUOTE = 0x22

const hexValue = (text: string, at: number): number => {
  const digits = text.slice(at, at + 4)
  return /^[0-9a-fA-F]{4}$/.test(digits) ? Number.parseInt(digits, 16) : -1
}

/** Inside a string, the characters the check must look at; a regular expression skips the rest natively. */
const STRING_STOP = /["\\\0\ud800-\udfff]/g

/**
 * Plain characters in a row inside one string before the rest of it is skipped by `STRING_STOP`
 * instead of read one at a time. Short strings (keys, most values) stay in the loop, which is
 * cheaper than a regular expression's call; a long one (a staged file's base64 content, 35
 * million characters) is crossed in a few milliseconds instead of about 150.
 */
const LONG_RUN = 32

/**
 * The same check on JSON text, without parsing it: the HTTP edge runs it over every request body
 * (one pass over the characters; the API parses the text afterwards). Text that is not valid JSON
 * is left to the parser, which refuses it anyway. `allowNul`: for text whose strings are never
 * stored (a trigger's pushed payload), an escaped NUL is no reason to refuse it.
 */
export const unstorableText = (text: string, allowNul = false): Unstorable | undefined => {
  let depth = 0
  let inString = false
  let run = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (inString) {
      if (code === QUOTE) inString = false
      else if (code === BACKSLASH) {
        run = 0
        if (text.charCodeAt(i + 1) !== 0x75) {
          i++
          continue
        }
        // A \uXXXX escape: NUL, or a surrogate without its pair.
        const unit = hexValue(text, i + 2)
        if (unit === 0 && !allowNul) return "nul"
        if (unit >= 0xd800 && unit <= 0xdfff) {
          const paired = unit <= 0xdbff && text.charCodeAt(i + 6) === BACKSLASH && text.charCodeAt(i + 7) === 0x75 &&
            hexValue(text, i + 8) >= 0xdc00 && hexValue(text, i + 8) <= 0xdfff
          if (!paired) return "surrogate"
          i += 6
        }
        i += 5
      } else if (code === 0) {
        // A raw NUL inside a string is no JSON (RFC 8259 section 7: control characters are
        // escaped), whatever it would hold: the parser refuses the text.
        return undefined
      } else if (code >= 0xd800 && code <= 0xdfff) {
        const next = text.charCodeAt(i + 1)
        if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) i++
        else return "surrogate"
      } else if (++run === LONG_RUN) {
        // Land just before the next character to look at (or past the end), for the loop's i++.
        run = 0
        STRING_STOP.lastIndex = i + 1
        i = STRING_STOP.test(text) ? STRING_STOP.lastIndex - 2 : text.length
      }
    } else if (code === QUOTE) {
      inString = true
      run = 0
    } else if (code === 0x5b || code === 0x7b) {
      if (++depth > MAX_DEPTH) return "depth"
    } else if (code === 0x5d || code === 0x7d) depth--
  }
  return undefined
}
