// Swagger UI's own markup fails WCAG 2.1 AA in a few places (axe: light text on its coloured
// method badges, version tags and Authorize button; the schemas' pale "Expand all" buttons; example
// bodies that scroll but cannot take the keyboard's focus; a chooser of the document's `servers`
// with no name, hidden here: the page is served by the one server it describes). This style
// sheet, served beside Swagger UI's, mends what CSS can; the options in openapi.ts mend the rest
// (no top bar with its unlabelled URL field and its logo without alt text; no deep links, whose
// anchors sat inside each operation's toggle button; no list of the named shapes).

/** Text on these backgrounds is white: each is dark enough for a contrast of at least 4.5:1. */
const METHOD_BACKGROUNDS: Readonly<Record<string, string>> = {
  get: '#1b5e9f',
  post: '#17723f',
  put: '#8a4b00',
  patch: '#0f6b5c',
  delete: '#b3261e',
  head: '#5b3d99',
  options: '#0d5aa7',
};

const methodRules = Object.entries(METHOD_BACKGROUNDS)
  .map(([method, background]) => `.swagger-ui .opblock.opblock-${method} .opblock-summary-method { background: ${background}; color: #fff; }`)
  .join('\n');

/** The style sheet `/docs` loads after Swagger UI's own. */
export const DOCS_THEME_CSS = `${methodRules}
.swagger-ui .info .title small { background: #4a5261; }
.swagger-ui .info .title small.version-stamp { background: #2d6a1f; }
.swagger-ui .info .title small pre { color: #fff; }
.swagger-ui .info a, .swagger-ui .info .link .url, .swagger-ui .url { color: #1f4f8f; }
.swagger-ui .btn.authorize { color: #17723f; border-color: #17723f; }
.swagger-ui .btn.authorize svg { fill: #17723f; }
.swagger-ui .json-schema-2020-12-expand-deep-button { color: #1f4f8f; }
.swagger-ui .servers-title, .swagger-ui .servers { display: none; }
.swagger-ui .highlight-code > .microlight, .swagger-ui .highlight-code > pre { overflow: visible; max-height: none; white-space: pre-wrap; overflow-wrap: anywhere; }
.swagger-ui .opblock-summary-path a { pointer-events: none; }
`;
