/** The dashboard's entry: styles, then the app into #app. */
import { render } from "preact"
import { App } from "./App.tsx"
import "./styles.css"

const root = document.getElementById("app")
if (root !== null) render(<App />, root)
