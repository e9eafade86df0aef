// The bounds of an SVG logo, read by the logo checks (logo.ts) and the cleaner (svg-clean.ts).
/**
 * Elements an SVG logo may draw, `use` copies counted (svg-clean.ts): a design tool's logo has hundreds.
 * Measured: 1,000 gradient-filled circles covering a 512 px box take resvg 3.5 s, 2,400 plain ones 0.8 s.
 */
export const SVG_MAX_ELEMENTS = 1000
/** Of those, with group opacity or a clip path (each a layer resvg allocates and blends): 64 take 0.3 s. */
export const SVG_MAX_LAYERS = 64
/** An SVG logo is drawn at most this many pixels a side (the SVG answer's embedded PNG; a PNG answer's box is smaller). */
export const SVG_MAX_SIDE = 512
/** Nesting deeper than this is refused: each group level may cost resvg a layer the size of the image. */
export const SVG_MAX_DEPTH = 32
