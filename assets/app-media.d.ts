// assets/app-media.js is imported as text (with { type: 'text' }) and served as is.
declare const text: string
export default text
