package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"strings"
)

// A token is "tabula_<id>_<secret>": id is 16 hex digits naming its etcd
// record, secret 64 hex digits (256 random bits). The record keeps only
// SHA-256(secret): a fast hash is enough because the secret is random and
// long, unlike a password, so it cannot be guessed from its hash.
const tokenPrefix = "tabula_"

var errMalformedToken = errors.New("auth: the token is malformed: it must look like tabula_<16 hex digits>_<64 hex digits>, as `tabula auth token create` prints it")

// newToken returns a fresh token, its id and the hash to store.
func newToken() (token, id, hash string, err error) {
	var idb [8]byte
	var secret [32]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return "", "", "", err
	}
	if _, err := rand.Read(secret[:]); err != nil {
		return "", "", "", err
	}
	id = hex.EncodeToString(idb[:])
	s := hex.EncodeToString(secret[:])
	return tokenPrefix + id + "_" + s, id, hashSecret(s), nil
}

// parseToken splits a token into its id and secret.
func parseToken(token string) (id, secret string, err error) {
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok {
		return "", "", errMalformedToken
	}
	id, secret, ok = strings.Cut(rest, "_")
	if !ok || len(id) != 16 || len(secret) != 64 || !isHex(id) || !isHex(secret) {
		return "", "", errMalformedToken
	}
	return id, secret, nil
}

func hashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// secretMatches compares in constant time, so response timing does not
// reveal how much of a guessed secret's hash was right.
func secretMatches(secret, storedHash string) bool {
	return subtle.ConstantTimeCompare([]byte(hashSecret(secret)), []byte(storedHash)) == 1
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
