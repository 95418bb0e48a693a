"""TLS material for the tests: a CA, a server certificate for 127.0.0.1 and
localhost, and a client certificate, made with openssl in a folder. Used by
operations_auth_test.py and tests/client/connection_test.py."""

import os
import subprocess

OPENSSL_CONFIG = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = pricer test
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
[client]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
"""


def make_certificates(directory):
    """A CA, a server certificate for 127.0.0.1 and localhost, and a client
    certificate, all P-256; returns {name: path} for ca.pem, server.pem,
    server.key, client.pem, client.key."""
    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60,
                       cwd=directory)

    with open(os.path.join(directory, "openssl.cnf"), "w") as f:
        f.write(OPENSSL_CONFIG)
    for name in ("ca", "server", "client"):
        openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-out", name + ".key")
        os.chmod(os.path.join(directory, name + ".key"), 0o600)
    openssl("req", "-x509", "-new", "-key", "ca.key", "-config", "openssl.cnf", "-extensions", "ca",
            "-subj", "/CN=pricer test CA", "-days", "2", "-out", "ca.pem")
    for name, subject in (("server", "/CN=localhost"), ("client", "/CN=pricer test client")):
        openssl("req", "-new", "-key", name + ".key", "-config", "openssl.cnf", "-subj", subject,
                "-out", name + ".csr")
        openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "2", "-extfile", "openssl.cnf", "-extensions", name,
                "-out", name + ".pem")
    return {name: os.path.join(directory, name)
            for name in ("ca.pem", "server.pem", "server.key", "client.pem", "client.key")}


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()
