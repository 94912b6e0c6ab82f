/**
 * pdf-lib, loaded at the first PDF a request or a consumer writes rather than at Worker startup: its module (with the
 * SVG parser, colour and HTML-entity tables of the @pdfme fork, and the compressed standard-font metrics) took about
 * a fifth of the startup CPU. Modules that draw PDFs import its types only and call this.
 */
export const pdfLib = () => import("@pdfme/pdf-lib");
