// Completes the OCI image layout deploy/image/build made with umoci, with what umoci cannot write:
//   node finish-layout.mjs LAYOUT TAG
// - the HEALTHCHECK: Docker's image config field `config.Healthcheck` (the OCI config has none; Docker
//   and BuildKit read and write it in OCI configs too), the command deploy/image/healthcheck.mjs;
// - the name `docker load` and containerd give the image (`io.containerd.image.name` on the index);
// - manifest.json, the docker-archive index, for a Docker older than 25 that reads no index.json.
// The config and manifest change, so their blobs are written anew under their new digests and the
// descriptors pointing at them are rewritten; the old blobs are left to `umoci gc`. Deterministic:
// the same layout in gives the same bytes out.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** What deploy/image/Containerfile's HEALTHCHECK says too (test/deploy/image.test.ts compares them). */
const HEALTHCHECK = {
  Test: ['CMD', '/usr/local/bin/node', '/usr/local/lib/svc/healthcheck.mjs'],
  Interval: 30e9,
  Timeout: 5e9,
  StartPeriod: 60e9,
  StartInterval: 2e9,
  Retries: 3,
};

const [layout, tag] = process.argv.slice(2);
if (!layout || !tag) {
  process.stderr.write('usage: node finish-layout.mjs LAYOUT TAG\n');
  process.exit(2);
}
const blobPath = (digest) => join(layout, 'blobs', ...digest.split(':'));
const readBlob = (descriptor) => {
  const data = readFileSync(blobPath(descriptor.digest));
  const actual = `sha256:${createHash('sha256').update(data).digest('hex')}`;
  if (actual !== descriptor.digest) throw new Error(`${descriptor.digest}: the blob's digest is ${actual}`);
  return JSON.parse(data.toString('utf8'));
};
/** Writes a JSON blob and returns its descriptor (the media type the old one had). */
const writeBlob = (mediaType, value) => {
  const data = Buffer.from(JSON.stringify(value));
  const digest = `sha256:${createHash('sha256').update(data).digest('hex')}`;
  writeFileSync(blobPath(digest), data);
  return { mediaType, digest, size: data.length };
};

const indexPath = join(layout, 'index.json');
const index = JSON.parse(readFileSync(indexPath, 'utf8'));
const at = index.manifests.findIndex((m) => m.annotations?.['org.opencontainers.image.ref.name'] === tag);
if (at < 0) throw new Error(`${layout} has no image tagged ${tag}`);
const manifest = readBlob(index.manifests[at]);
const config = readBlob(manifest.config);
config.config.Healthcheck = HEALTHCHECK;
manifest.config = writeBlob(manifest.config.mediaType, config);
const name = `docker.io/library/svc:${tag}`;
index.manifests[at] = {
  ...writeBlob(index.manifests[at].mediaType, manifest),
  annotations: { 'io.containerd.image.name': name, 'org.opencontainers.image.ref.name': tag },
};
writeFileSync(indexPath, JSON.stringify(index));
const repoPath = (digest) => `blobs/${digest.split(':').join('/')}`;
writeFileSync(join(layout, 'manifest.json'), JSON.stringify([{ Config: repoPath(manifest.config.digest), RepoTags: [`svc:${tag}`], Layers: manifest.layers.map((l) => repoPath(l.digest)) }]));
