/**
 * Text shown back or written to logs as supplied (file names, idempotency keys): no C0 or C1
 * control character and no DEL. A line break (NEL, U+0085, among them) would split a log line;
 * the others corrupt headers and terminals downstream.
 */
import { Schema } from "effect"

// oxlint-disable-next-line no-control-regex -- matching control characters is the point
const PRINTABLE = /^[^\u0000-\u001f\u007f-\u009f]*$/u

/** A check refusing control characters, with `message` as its issue. */
export const isPrintable = (message: string) => Schema.isPattern(PRINTABLE, { message })
