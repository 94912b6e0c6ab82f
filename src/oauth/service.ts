/**
 * What other domains may use of the sign-in (STYLE.md: a domain reaches another through its service.ts): the
 * e-mail-code sign-in, with its caps and lockouts, for a page of their own that signs a person in (an invitation
 * link, src/users/). The browser's state is the sign-in cookie of that page's path, with forms tied to it by a CSRF
 * token.
 */
export { codeSignInDeps, enterSignInCode, sendSignInCode } from "./email-code";
export { csrfTokenFor, csrfTokenMatches, endSignIn, findSignIn, newCookieValue, signInCookie } from "./sign-in";
