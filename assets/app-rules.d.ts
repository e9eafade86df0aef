// assets/app-rules.js is imported as text (with { type: 'text' }) and joined into the served script.
declare const text: string
export default text
