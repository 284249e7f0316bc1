"""aiohttp's TLS client contexts read the CA certificates from where they always did
(OpenSSL's default paths, here pointed at a test CA by SSL_CERT_FILE), but on the first
TLS connection rather than at import. Each case runs in a fresh interpreter: the
deferral must be in place before aiohttp is imported."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

REPO = Path(__file__).resolve().parent.parent

CLIENT = """
import asyncio, json, ssl, sys
from sidecar.deferred_cas import defer_ca_loading
defer_ca_loading()
import aiohttp
from aiohttp import web
import aiohttp.connector as connector

def stats():
    return [connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509_ca"],
            connector._SSL_CONTEXT_UNVERIFIED.cert_store_stats()["x509_ca"]]

async def fetch(cert, key):
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert, key)
    app = web.Application()
    app.router.add_get("/", lambda request: web.Response(text="hello"))
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_tls)
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"https://localhost:{port}/") as resp:
                return await resp.text()
    except aiohttp.ClientConnectorCertificateError as exc:
        return f"refused: {exc.certificate_error.verify_message}"
    finally:
        await runner.cleanup()

async def main():
    plain = ssl.create_default_context().cert_store_stats()["x509_ca"]
    out = {"at_import": stats(), "plain": plain}
    out["trusted"] = await fetch(sys.argv[1], sys.argv[2])
    out["after_use"] = stats()
    out["untrusted"] = await fetch(sys.argv[3], sys.argv[4])
    print(json.dumps(out))

asyncio.run(main())
"""


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _issue(tmp: Path, tag: str) -> tuple[Path, Path, Path]:
    """A CA of its own and a certificate it signs for localhost: (ca, cert, key) files."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder().subject_name(_name(f"{tag} CA")).issuer_name(_name(f"{tag} CA"))
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    cert = (
        x509.CertificateBuilder().subject_name(_name("localhost")).issuer_name(ca.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    paths = tmp / f"{tag}-ca.pem", tmp / f"{tag}-cert.pem", tmp / f"{tag}-key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))  # fmt: skip
    return paths


def test_aiohttp_reads_the_default_cas_on_first_use_and_still_verifies(tmp_path: Path) -> None:
    trusted_ca, trusted_cert, trusted_key = _issue(tmp_path, "trusted")
    _, other_cert, other_key = _issue(tmp_path, "other")
    env = {**os.environ, "PYTHONPATH": str(REPO), "SSL_CERT_FILE": str(trusted_ca),
           "SSL_CERT_DIR": str(tmp_path / "no-such-dir")}  # fmt: skip
    args = [str(p) for p in (trusted_cert, trusted_key, other_cert, other_key)]
    done = subprocess.run([sys.executable, "-c", CLIENT, *args], env=env, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["at_import"] == [0, 0]  # nothing read while aiohttp imported
    assert out["plain"] == 1  # a context made afterwards loads at once, as ever
    assert out["trusted"] == "hello"  # the default path's CA, read on first use
    assert out["after_use"][0] == 1
    assert out["untrusted"].startswith("refused:")  # and verification is on
