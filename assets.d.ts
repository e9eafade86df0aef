declare module '*.html' {
  const text: string
  export default text
}
declare module '*.css' {
  const text: string
  export default text
}
