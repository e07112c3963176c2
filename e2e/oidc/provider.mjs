#!/usr/bin/env node
// provider.mjs is a real OAuth 2.1 authorization server for Switchboard's
// tests, built on oidc-provider (pinned in e2e/package.json). It serves
// what an MCP client meets when it signs in to a remote server:
//
//   - metadata at /.well-known/openid-configuration and (the same
//     document) /.well-known/oauth-authorization-server (RFC 8414),
//     naming authorization_response_iss_parameter_supported (RFC 9207);
//   - open dynamic client registration at /reg (RFC 7591), no initial
//     access token; clients given with --client are pre-registered;
//   - the authorization code flow at /auth with PKCE S256 required for
//     every client, and the iss parameter in every authorization response;
//   - resource indicators (RFC 8707): a request naming resource=URL gets a
//     JWT access token (typ at+jwt, RS256) whose aud is that URL and whose
//     scope claim holds the scopes granted; the code exchange and refresh
//     may name it again or not. An authorization request naming no
//     resource is answered error=access_denied (its scopes belong to no
//     resource) unless it asks for openid, which gets an opaque access
//     token that no resource server here accepts;
//   - refresh tokens for every client allowed the refresh_token grant
//     (the default grant_types of a registration are authorization_code
//     and refresh_token; no offline_access needed), rotated on every use
//     for public clients: reusing a spent one is refused and ends its grant;
//   - token revocation at /token/revocation (RFC 7009): revoking a
//     refresh token ends its grant;
//   - signing keys at /jwks, made fresh at every start.
//
// Sign-in is oidc-provider's development login and consent pages (any
// login name and password are accepted; the name becomes the subject), or,
// with --auto-approve, nothing at all: a GET of the authorization URL is
// answered with the redirect to the client, code, state and iss included.
//
// Flags (each also read from the environment variable OIDC_<FLAG>, for
// example OIDC_PORT or OIDC_AUTO_APPROVE=1; a flag wins over its variable;
// OIDC_RESOURCE holds URLs separated by spaces, OIDC_CLIENT a JSON object
// or array of objects):
//
//   --port N             port on 127.0.0.1 (0, the default: any free port)
//   --resource URL       accept this resource indicator; repeat for more.
//                        Without it any absolute http(s) URL is accepted.
//   --scopes "a b"       scopes of every resource (default "mcp"); a GET
//                        authorization request naming no scope gets them
//                        all; other scopes asked for are dropped, and a
//                        request left with none is refused (access_denied)
//   --access-ttl S       access token lifetime in seconds (default 3600)
//   --refresh-ttl S      refresh token lifetime in seconds (default 14 days)
//   --auto-approve       sign in as --account and consent without a page
//   --account ID         subject of --auto-approve (default "test-user"); an
//                        authorization request's login_hint names another.
//                        A subject that is an email address is also the
//                        account's email (email_verified true; scope email)
//   --groups JSON        the groups claim of accounts (scope groups), as
//                        {"ann@example.com": ["eng"], …}
//   --client JSON        pre-register a client (RFC 7591 metadata with
//                        client_id; token_endpoint_auth_method defaults to
//                        none, as for registered clients); repeat for more
//   --no-registration    turn dynamic client registration off
//   --discovery WHICH    both (default), openid (only
//                        /.well-known/openid-configuration) or oauth (only
//                        /.well-known/oauth-authorization-server)
//   --cimd               accept Client ID Metadata Documents (client_id is
//                        an https URL); documents at https://127.0.0.1:PORT/…
//                        and https://localhost:PORT/… are fetched over http
//   --admin              serve POST /admin/revoke-all (204): every grant
//                        issued so far is revoked with its codes and
//                        tokens, as when a person revokes an app's access
//                        at the authorization server (a refresh then
//                        answers invalid_grant; JWT access tokens stay
//                        valid until they expire)
//   --echo-token-errors "a b"
//                        make the token endpoint hostile for these grant
//                        types (e.g. "refresh_token", or "authorization_code
//                        refresh_token"): such a request is refused, and
//                        its error_description echoes the request whole,
//                        as a careless server might: the raw form body,
//                        its fields as JSON, the Authorization header and
//                        the Basic credentials decoded (refresh token,
//                        code, code verifier and client secret included).
//                        Token requests of other grant types are served.
//   --echo-error CODE    the error of such a refusal (default invalid_grant)
//   --echo-status N      its HTTP status (default 400)
//
// Once it listens it prints one line to stdout, "listening <issuer URL>";
// everything else goes to stderr. It exits on SIGTERM or SIGINT and, when
// stdin is a pipe, once stdin is closed.
//
// Redirect URIs: a client may register http://127.0.0.1/…, http://localhost/…
// or http://[::1]/… with or without a port and use them with any port
// (RFC 8252 section 7.3), whatever its application_type.

import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import { parseArgs } from 'node:util';

import Provider, { errors } from 'oidc-provider';

// oidc-provider writes its notices with console.info, which would reach
// stdout; stdout carries nothing but the listening line.
console.info = console.error;
console.log = console.error;

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

// options parses the command line, falling back to OIDC_<FLAG> variables.
function options(argv, env) {
  const spec = {
    port: { type: 'string', default: '0' },
    resource: { type: 'string', multiple: true, default: [] },
    scopes: { type: 'string', default: 'mcp' },
    'access-ttl': { type: 'string', default: '3600' },
    'refresh-ttl': { type: 'string', default: String(14 * 24 * 60 * 60) },
    'auto-approve': { type: 'boolean', default: false },
    account: { type: 'string', default: 'test-user' },
    groups: { type: 'string', default: '{}' },
    client: { type: 'string', multiple: true, default: [] },
    'no-registration': { type: 'boolean', default: false },
    discovery: { type: 'string', default: 'both' },
    cimd: { type: 'boolean', default: false },
    admin: { type: 'boolean', default: false },
    'echo-token-errors': { type: 'string', default: '' },
    'echo-error': { type: 'string', default: 'invalid_grant' },
    'echo-status': { type: 'string', default: '400' },
    help: { type: 'boolean', short: 'h', default: false },
  };
  const { values } = parseArgs({ args: argv, options: spec, strict: true });
  const given = new Set(argv.filter((a) => a.startsWith('--')).map((a) => a.slice(2).split('=')[0]));
  for (const [name, { type, multiple }] of Object.entries(spec)) {
    const value = env[`OIDC_${name.toUpperCase().replaceAll('-', '_')}`];
    if (value === undefined || value === '' || given.has(name)) continue;
    if (type === 'boolean') values[name] = value === '1' || value === 'true';
    else if (name === 'client') values[name] = [JSON.parse(value)].flat().map((c) => JSON.stringify(c));
    else if (multiple) values[name] = value.split(/\s+/).filter(Boolean);
    else values[name] = value;
  }
  const seconds = (name) => {
    const n = Number(values[name]);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive number of seconds, not ${values[name]}`);
    return n;
  };
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be 0-65535, not ${values.port}`);
  if (!['both', 'openid', 'oauth'].includes(values.discovery)) {
    throw new Error(`--discovery must be both, openid or oauth, not ${values.discovery}`);
  }
  for (const r of values.resource) {
    if (!isResourceURL(r)) throw new Error(`--resource ${r} is not an absolute http(s) URL without a fragment`);
  }
  const scopes = values.scopes.split(' ').filter(Boolean);
  if (scopes.length === 0) throw new Error('--scopes must name at least one scope');
  const echoStatus = Number(values['echo-status']);
  if (!Number.isInteger(echoStatus) || echoStatus < 400 || echoStatus > 599) {
    throw new Error(`--echo-status must be an HTTP error status (400-599), not ${values['echo-status']}`);
  }
  const clients = values.client.map((c) => {
    const metadata = JSON.parse(c);
    if (typeof metadata?.client_id !== 'string') throw new Error(`--client ${c} has no client_id`);
    return metadata;
  });
  return {
    help: values.help,
    port,
    resources: values.resource,
    scopes,
    accessTTL: seconds('access-ttl'),
    refreshTTL: seconds('refresh-ttl'),
    autoApprove: values['auto-approve'],
    account: values.account,
    groups: JSON.parse(values.groups),
    clients,
    registration: !values['no-registration'],
    discovery: values.discovery,
    cimd: values.cimd,
    admin: values.admin,
    echoGrants: values['echo-token-errors'].split(' ').filter(Boolean),
    echoError: values['echo-error'],
    echoStatus,
  };
}

// isResourceURL reports whether value may be a resource indicator here.
function isResourceURL(value) {
  const u = URL.parse(value);
  return u !== null && (u.protocol === 'http:' || u.protocol === 'https:') && !value.includes('#');
}

// loopbackWithoutPort returns uri without its port when it is an http
// loopback URI, else undefined.
function loopbackWithoutPort(uri) {
  const u = URL.parse(uri);
  if (u === null || u.protocol !== 'http:' || !LOOPBACK_HOSTS.has(u.hostname)) return undefined;
  u.port = '';
  return u.href;
}

// configuration builds oidc-provider's configuration from opts.
function configuration(opts) {
  const jwk = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  jwk.use = 'sig';
  jwk.alg = 'RS256';
  jwk.kid = crypto.randomBytes(8).toString('hex');
  const allowed = new Set(opts.resources);
  return {
    jwks: { keys: [jwk] },
    cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
    clients: opts.clients,
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      id_token_signed_response_alg: 'RS256',
    },
    responseTypes: ['code'],
    scopes: ['openid', 'offline_access', 'email', 'groups'],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], groups: ['groups'] },
    pkce: { required: () => true },
    findAccount: (_ctx, sub) => ({
      accountId: sub,
      claims: () => ({
        sub,
        ...(sub.includes('@') ? { email: sub, email_verified: true } : {}),
        groups: opts.groups[sub] ?? [],
      }),
    }),
    features: {
      devInteractions: { enabled: !opts.autoApprove },
      dPoP: { enabled: false },
      registration: { enabled: opts.registration, initialAccessToken: false },
      revocation: { enabled: true, allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId },
      clientIdMetadataDocument: { enabled: opts.cimd, ack: 'draft-02' },
      resourceIndicators: {
        enabled: true,
        // A refresh or code exchange that names no resource is for the
        // one the grant was for.
        defaultResource: async (_ctx, _client, oneOf) => oneOf,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, resource) => {
          if (!isResourceURL(resource) || (allowed.size > 0 && !allowed.has(resource))) {
            throw new errors.InvalidTarget(`resource ${resource} is not served by this authorization server`);
          }
          return {
            scope: opts.scopes.join(' '),
            audience: resource,
            accessTokenTTL: opts.accessTTL,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    expiresWithSession: async () => false,
    ttl: {
      AccessToken: () => opts.accessTTL,
      AuthorizationCode: 60,
      Grant: opts.refreshTTL,
      IdToken: 3600,
      Interaction: 3600,
      RefreshToken: () => opts.refreshTTL,
      Session: opts.refreshTTL,
    },
    // The tests run over plain http on loopback: fetch Client ID Metadata
    // Documents from loopback https URLs over http, without the dispatcher
    // that refuses to connect to special-use (here: loopback) addresses.
    fetch: (url, init) => {
      const u = new URL(url);
      if (opts.cimd && u.protocol === 'https:' && LOOPBACK_HOSTS.has(u.hostname)) {
        u.protocol = 'http:';
        const { dispatcher, ...rest } = init;
        return globalThis.fetch(u, rest);
      }
      return globalThis.fetch(u, init);
    },
    renderError: async (ctx, out) => {
      ctx.type = 'json';
      ctx.body = out;
    },
  };
}

// allowLoopbackRedirects lets every client use its registered loopback
// redirect URIs with any port (oidc-provider does so for native clients
// only).
function allowLoopbackRedirects(provider) {
  const exact = provider.Client.prototype.redirectUriAllowed;
  provider.Client.prototype.redirectUriAllowed = function redirectUriAllowed(value) {
    if (exact.call(this, value)) return true;
    const wanted = loopbackWithoutPort(value);
    return wanted !== undefined && this.redirectUris.some((uri) => loopbackWithoutPort(uri) === wanted);
  };
}

// discoveryRoutes serves the metadata document under the names --discovery
// allows, listing the resources' scopes in scopes_supported.
function discoveryRoutes(opts) {
  return async (ctx, next) => {
    if (!ctx.path.startsWith('/.well-known/')) {
      await next();
      return;
    }
    if (ctx.path === '/.well-known/openid-configuration' && opts.discovery === 'oauth') {
      ctx.status = 404;
      return;
    }
    if (ctx.path === '/.well-known/oauth-authorization-server') {
      if (opts.discovery === 'openid') {
        ctx.status = 404;
        return;
      }
      ctx.path = '/.well-known/openid-configuration';
    }
    await next();
    if (ctx.status === 200 && Array.isArray(ctx.body?.scopes_supported)) {
      ctx.body.scopes_supported = [...new Set([...ctx.body.scopes_supported, ...opts.scopes])];
    }
  };
}

// defaultScope gives an authorization request that names no scope every
// scope of the resources (oidc-provider grants nothing to a request
// without scope).
function defaultScope(opts) {
  return async (ctx, next) => {
    if (ctx.path === '/auth' && ctx.method === 'GET' && !ctx.query.scope) {
      ctx.query = { ...ctx.query, scope: opts.scopes.join(' ') };
    }
    await next();
  };
}

// autoApprove answers every interaction (login, then consent) at once,
// and follows the redirects of an authorization request on the server's
// side, so that its answer is the redirect to the client.
function autoApprove(provider, opts) {
  return async (ctx, next) => {
    const interaction = ctx.path.match(/^\/interaction\/([^/]+)$/);
    if (interaction && ctx.method === 'GET') {
      const { prompt, params, session, grantId } = await provider.interactionDetails(ctx.req, ctx.res);
      let result;
      if (prompt.name === 'login') {
        result = { login: { accountId: params.login_hint || opts.account } };
      } else {
        const grant = grantId
          ? await provider.Grant.find(grantId)
          : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
        const { details } = prompt;
        if (details.missingOIDCScope) grant.addOIDCScope(details.missingOIDCScope.join(' '));
        if (details.missingOIDCClaims) grant.addOIDCClaims(details.missingOIDCClaims);
        for (const [resource, scopes] of Object.entries(details.missingResourceScopes ?? {})) {
          grant.addResourceScope(resource, scopes.join(' '));
        }
        result = { consent: { grantId: await grant.save() } };
      }
      const to = await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: true });
      ctx.status = 303;
      ctx.redirect(to);
      return;
    }
    await next();
    if (ctx.path !== '/auth' || ctx.status !== 303) return;
    const cookies = new Map();
    const keep = (setCookies) => {
      for (const c of setCookies ?? []) {
        const [pair] = c.split(';');
        const eq = pair.indexOf('=');
        cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
      }
    };
    keep([ctx.response.get('Set-Cookie')].flat().filter(Boolean));
    let location = new URL(ctx.response.get('Location'), provider.issuer);
    for (let hop = 0; hop < 10 && location.origin === new URL(provider.issuer).origin; hop++) {
      const res = await fetch(location, {
        redirect: 'manual',
        headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
      });
      keep(res.headers.getSetCookie());
      const next = res.headers.get('location');
      if (!next) {
        ctx.status = res.status;
        ctx.type = res.headers.get('content-type') ?? 'text/plain';
        ctx.body = await res.text();
        return;
      }
      location = new URL(next, location);
    }
    ctx.redirect(location.href);
  };
}

// adminRoutes serves POST /admin/revoke-all: it revokes every grant the
// provider issued a code or token for, with all of them.
function adminRoutes(provider) {
  const grants = new Set();
  for (const event of ['authorization_code.saved', 'access_token.saved', 'refresh_token.saved']) {
    provider.on(event, (token) => {
      if (token.grantId) grants.add(token.grantId);
    });
  }
  return async (ctx, next) => {
    if (ctx.path !== '/admin/revoke-all') {
      await next();
      return;
    }
    if (ctx.method !== 'POST') {
      ctx.status = 405;
      return;
    }
    for (const grantId of grants) {
      await Promise.all([provider.AccessToken, provider.RefreshToken, provider.AuthorizationCode]
        .map((model) => model.revokeByGrantId(grantId))
        .concat(provider.Grant.adapter.destroy(grantId)));
    }
    console.error(`provider.mjs: revoked ${grants.size} grant(s)`);
    grants.clear();
    ctx.status = 204;
  };
}

// echoTokenErrors makes the token endpoint hostile for the grant types of
// --echo-token-errors: such a request is refused with --echo-error and
// --echo-status, and an error_description that echoes everything the
// client sent. Other token requests go on to oidc-provider, with the body
// read here handed over as a string (its fallback for a body an upstream
// middleware read).
function echoTokenErrors(opts) {
  return async (ctx, next) => {
    if (ctx.path !== '/token' || ctx.method !== 'POST') {
      await next();
      return;
    }
    const chunks = [];
    for await (const chunk of ctx.req) chunks.push(chunk);
    const raw = Buffer.concat(chunks).toString('utf8');
    const fields = Object.fromEntries(new URLSearchParams(raw));
    if (!opts.echoGrants.includes(fields.grant_type)) {
      ctx.req.body = raw;
      await next();
      return;
    }
    const authorization = ctx.get('authorization');
    const [scheme, credentials] = authorization.split(' ');
    const basic = scheme?.toLowerCase() === 'basic' ? Buffer.from(credentials ?? '', 'base64').toString('utf8') : '';
    console.error(`provider.mjs: echoing a ${fields.grant_type} request in its refusal`);
    ctx.status = opts.echoStatus;
    ctx.type = 'json';
    ctx.body = {
      error: opts.echoError,
      error_description: `the token endpoint echoes its request: body ${raw}; fields ${JSON.stringify(fields)}; ` +
        `authorization ${authorization}; basic ${basic}`,
    };
  };
}

// listen starts the server on 127.0.0.1:port and resolves to it once it
// listens.
function listen(server, port) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

async function main() {
  let opts;
  try {
    opts = options(process.argv.slice(2), process.env);
  } catch (err) {
    console.error(`provider.mjs: ${err.message}`);
    process.exit(2);
  }
  if (opts.help) {
    const text = fs.readFileSync(new URL(import.meta.url), 'utf8');
    const flags = text.slice(text.indexOf('// Flags'), text.indexOf('// Once it listens'));
    process.stderr.write(flags.replaceAll(/^\/\/ ?/gm, ''));
    return;
  }

  const server = http.createServer();
  await listen(server, opts.port);
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;

  const provider = new Provider(issuer, configuration(opts));
  allowLoopbackRedirects(provider);
  if (opts.admin) provider.use(adminRoutes(provider));
  if (opts.echoGrants.length > 0) provider.use(echoTokenErrors(opts));
  provider.use(discoveryRoutes(opts));
  provider.use(defaultScope(opts));
  if (opts.autoApprove) provider.use(autoApprove(provider, opts));
  provider.on('server_error', (_ctx, err) => console.error('provider.mjs: server error:', err));
  server.on('request', provider.callback());

  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    server.close(() => process.exit(0));
    server.closeAllConnections();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  const stdin = fs.fstatSync(0);
  if (stdin.isFIFO() || stdin.isSocket()) {
    process.stdin.on('end', stop);
    process.stdin.on('close', stop);
    process.stdin.resume();
  }

  process.stdout.write(`listening ${issuer}\n`);
}

main().catch((err) => {
  console.error('provider.mjs:', err);
  process.exit(1);
});
