/** What replaces a secret in redacted text. */
export const REDACTED = '***';

/** `scheme://user:password@`: the password of a URL's userinfo (`user` is kept). */
const USERINFO_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^\s/?#@:'"]*):[^\s/?#@'"]*@/gi;

/** Query parameters and `key=value` settings that carry a credential. */
const SECRET_PARAM =
  /([?&;\s]|^)((?:auth_?token|access_?token|token|password|passwd|pwd|api_?key)=)[^\s&#;'"]*/gi;

/** An HTTP `Authorization` value (`Bearer <token>`, `Basic <base64>`). */
const AUTHORIZATION = /\b(Bearer|Basic)\s+[A-Za-z0-9\-._~+/=]+/g;

/**
 * `text` with the credentials it may carry replaced by `***`: the password of a URL's userinfo
 * (`postgres://user:***@host`, also in multi-host URLs), `authToken`, `token`, `password` and
 * similar `key=value` parameters, and `Bearer`/`Basic` authorization values; plus every
 * occurrence of the `secrets` given (a token or password the caller knows was configured).
 * Core applies it to every message a `MemoryError` is built with and to the messages of the
 * driver error it keeps as `cause`, so an error is safe to log.
 */
export function redactCredentials(text: string, secrets: readonly string[] = []): string {
  let clean = text
    .replace(USERINFO_PASSWORD, `$1:${REDACTED}@`)
    .replace(SECRET_PARAM, `$1$2${REDACTED}`)
    .replace(AUTHORIZATION, `$1 ${REDACTED}`);
  for (const secret of secrets) {
    if (secret.length > 0) clean = clean.split(secret).join(REDACTED);
  }
  return clean;
}
