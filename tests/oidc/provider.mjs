// A real OpenID Provider for the sign-in tests: the certified `oidc-provider` package
// (https://github.com/panva/node-oidc-provider, v8 docs: docs/README.md of the tag), configured
// from one JSON argument. tests/oidc_provider.py starts it; nothing in the product uses it.
//
// The configuration (argv[2], JSON):
//   issuer           the issuer identifier, e.g. "http://localhost:PORT"
//   listenFd         an inherited, bound and listening socket to serve on (no port race), or
//   port             a loopback port to listen on
//   client           {id, secret, redirectUris}: the one registered client (confidential,
//                    client_secret_basic, authorization code only, PKCE S256 required)
//   accounts         [{sub, email, email_verified, name}]: the people who can sign in
//   codeTtl          seconds an authorization code is valid (default 60)
//   idTokenClaims    true: the scope's claims (email, name) in the ID token too, as Google does;
//                    false (the default, oidc-provider's conformIdTokenClaims): only at userinfo
//   discoveryIssuer  a different `issuer` in the discovery document than the tokens carry (a
//                    misbehaving provider: "an ID token from another issuer")
//   publishOtherKey  the JWKS endpoint publishes another key under the signing key's `kid`
//                    ("an ID token signed by another key")
//
// Signing in is non-interactive for a program and usable by a browser: the interaction page
// (interactions.url, devInteractions off) is a form with one button per account and a Cancel
// button; POST /interaction/:uid with login=<sub> signs that account in, cancel=1 ends the
// request with access_denied (interactionFinished, docs "interactions"). Consent is implied
// for the one first-party client (loadExistingGrant, as the docs' "Skipping consent" recipe).
import crypto from 'node:crypto';
import http from 'node:http';

import Provider from 'oidc-provider';

const config = JSON.parse(process.argv[2]);
const accounts = new Map(config.accounts.map((a) => [a.sub, a]));

// ES256 (P-256): an RSA key takes seconds to make on a busy test machine.
function signingKey(kid) {
  const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { ...privateKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' };
}

function publicPart(jwk) {
  const { kty, crv, x, y, kid, alg, use } = jwk;
  return { kty, crv, x, y, kid, alg, use };
}

// A new kid at every start: a restarted provider has rotated its key.
const key = signingKey(crypto.randomUUID());
const otherKey = { ...signingKey('other'), kid: key.kid };

const provider = new Provider(config.issuer, {
  clients: [
    {
      client_id: config.client.id,
      client_secret: config.client.secret,
      redirect_uris: config.client.redirectUris,
      response_types: ['code'],
      grant_types: ['authorization_code'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: 'ES256',
    },
  ],
  jwks: { keys: [key] },
  cookies: {
    keys: [crypto.randomBytes(32).toString('hex')],
    // Plain HTTP on loopback: SameSite=None without Secure is refused by browsers.
    long: { httpOnly: true, sameSite: 'lax', signed: true },
    short: { httpOnly: true, sameSite: 'lax', signed: true },
  },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name'],
  },
  conformIdTokenClaims: !config.idTokenClaims,
  features: { devInteractions: { enabled: false } },
  pkce: { methods: ['S256'], required: () => true },
  ttl: {
    AuthorizationCode: config.codeTtl ?? 60,
    IdToken: 3600,
    AccessToken: 3600,
    Interaction: 600,
    Session: 3600,
    Grant: 3600,
  },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  async findAccount(ctx, sub) {
    const account = accounts.get(sub);
    if (!account) return undefined;
    return {
      accountId: sub,
      async claims() {
        const claims = { sub, email: account.email, email_verified: account.email_verified };
        if (account.name) claims.name = account.name;
        return claims;
      },
    };
  },
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId
      || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) {
      const grant = await ctx.oidc.provider.Grant.find(grantId);
      if (grant) return grant;
    }
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope('openid email profile');
    await grant.save();
    return grant;
  },
});

provider.use(async (ctx, next) => {
  await next();
  if (config.discoveryIssuer && ctx.path === '/.well-known/openid-configuration') {
    ctx.body = { ...ctx.body, issuer: config.discoveryIssuer };
  }
  if (config.publishOtherKey && ctx.path === '/jwks' && ctx.status === 200) {
    ctx.body = { keys: [publicPart(otherKey)] };
  }
});

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

async function readForm(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  if (req.method === 'GET') {
    const buttons = [...accounts.values()]
      .map((a) => `<button type="submit" name="login" value="${escapeHtml(a.sub)}">`
        + `Sign in as ${escapeHtml(a.email)}</button>`)
      .join('\n');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><html lang="en"><head><title>Test identity provider</title></head>
<body><main><h1>Test identity provider</h1>
<form method="post" action="/interaction/${escapeHtml(details.uid)}">
${buttons}
<button type="submit" name="cancel" value="1">Cancel</button>
</form></main></body></html>`);
    return;
  }
  const form = await readForm(req);
  let result;
  if (form.get('cancel')) {
    result = { error: 'access_denied', error_description: 'End-User aborted interaction' };
  } else if (accounts.has(form.get('login'))) {
    result = { login: { accountId: form.get('login') } };
  } else {
    res.writeHead(400, { 'content-type': 'text/plain' });
    res.end('unknown account');
    return;
  }
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
}

const callback = provider.callback();
const server = http.createServer((req, res) => {
  if (req.url.startsWith('/interaction/')) {
    interaction(req, res).catch((err) => {
      res.writeHead(400, { 'content-type': 'text/plain' });
      res.end(`interaction failed: ${err.message}`);
    });
    return;
  }
  callback(req, res);
});

const onListening = () => {
  process.stdout.write(`ready ${config.issuer}\n`);
};
if (config.listenFd !== undefined) {
  server.listen({ fd: config.listenFd }, onListening);
} else {
  server.listen(config.port, '127.0.0.1', onListening);
}

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    server.close();
    process.exit(0);
  });
}
