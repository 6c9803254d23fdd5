#!/bin/sh
# Throwaway certificates for the TLS scenarios, made at test time with the openssl CLI:
#   test-ca.crt            the CA the client trusts (and the server's --tls-client-ca)
#   server.crt/.key        signed by it, for localhost and 127.0.0.1
#   client.crt/.key        signed by it, a client certificate (mutual TLS)
#   rogue-ca.crt           another CA, trusted by no one
#   rogue-client.crt/.key  signed by the rogue CA
# EC P-256 keys (quick to make), valid for one day.   usage: make_test_certs.sh DIR
set -eu
cd "$1"

# new_key_and_csr NAME: NAME.key and NAME.csr with the subject CN=NAME
new_key_and_csr() {
  openssl ecparam -name prime256v1 -genkey -noout -out "$1.key.ec"
  openssl pkcs8 -topk8 -nocrypt -in "$1.key.ec" -out "$1.key"
  openssl req -new -key "$1.key" -subj "/CN=$1" -out "$1.csr"
}

# ca NAME: a self-signed CA certificate NAME.crt
ca() {
  new_key_and_csr "$1"
  printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign,digitalSignature\nsubjectKeyIdentifier=hash\n' >"$1.ext"
  openssl x509 -req -sha256 -days 1 -in "$1.csr" -signkey "$1.key" -extfile "$1.ext" -out "$1.crt"
}

# leaf NAME CA EXTENSIONS: NAME.crt signed by CA
leaf() {
  new_key_and_csr "$1"
  printf 'basicConstraints=critical,CA:FALSE\nauthorityKeyIdentifier=keyid\n%s\n' "$3" >"$1.ext"
  openssl x509 -req -sha256 -days 1 -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" \
    -set_serial "0x$(openssl rand -hex 8)" -extfile "$1.ext" -out "$1.crt"
}

ca test-ca
ca rogue-ca
leaf server test-ca 'extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,IP:127.0.0.1'
leaf client test-ca 'extendedKeyUsage=clientAuth'
leaf rogue-client rogue-ca 'extendedKeyUsage=clientAuth'
rm -f ./*.csr ./*.ext ./*.key.ec
