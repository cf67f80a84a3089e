// A webhook receiver: checks both signatures and the time, drops repeats, answers at once,
// works after.
// Run:  WEBHOOK_SECRET=<your secret> PORT=8080 go run receiver.go
// Serve it behind TLS: webhooks are only ever sent to https:// URLs.
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

var secret = []byte(os.Getenv("WEBHOOK_SECRET"))

// A delivery signed longer ago (or ahead) than this is refused.
const tolerance = 5 * time.Minute

var digits = regexp.MustCompile(`^[0-9]{1,15}$`)

type delivery struct {
	id   string
	body []byte
}

var (
	work = make(chan delivery, 1000)
	mu   sync.Mutex
	seen = map[string]bool{} // in production: a unique key on the delivery id where you keep work
)

func signedWithSecret(rawBody []byte, signature string) bool {
	// Hash the bytes exactly as received, before any JSON parsing.
	mac := hmac.New(sha256.New, secret)
	mac.Write(rawBody)
	expected := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	// hmac.Equal takes the same time wherever the two values differ.
	return hmac.Equal([]byte(expected), []byte(signature))
}

func signedRecently(rawBody []byte, header http.Header) bool {
	// Standard Webhooks' signature covers webhook-id and webhook-timestamp as well as the
	// body: a copy sent again later is stale, and one given another id does not verify.
	id, timestamp := header.Get("webhook-id"), header.Get("webhook-timestamp")
	if id == "" || !digits.MatchString(timestamp) {
		return false
	}
	seconds, _ := strconv.ParseInt(timestamp, 10, 64)
	age := time.Since(time.Unix(seconds, 0))
	if age > tolerance || age < -tolerance {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(id + "." + timestamp + "."))
	mac.Write(rawBody)
	expected := []byte("v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	// Several space-separated signatures while a secret is rotated: one of yours is enough.
	for _, given := range strings.Split(header.Get("webhook-signature"), " ") {
		if hmac.Equal(expected, []byte(given)) {
			return true
		}
	}
	return false
}

func isAuthentic(rawBody []byte, header http.Header) bool {
	// While a secret is rotated, X-Service-Signature is made with the new secret and
	// X-Service-Signature-Previous with the old one: either one matching yours is enough, so
	// you can switch WEBHOOK_SECRET to the new secret at any time during the grace period.
	signed := signedWithSecret(rawBody, header.Get("X-Service-Signature")) ||
		signedWithSecret(rawBody, header.Get("X-Service-Signature-Previous"))
	return signed && signedRecently(rawBody, header)
}

func receive(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil || r.Method != http.MethodPost || !isAuthentic(raw, r.Header) {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	// The same delivery can come again (a retry after a timeout, a Redeliver, a copy replayed
	// within the tolerance): answer it with a 2xx, so that hangar stops sending it, but handle
	// it only once. By webhook-id: the signature covers it.
	id := r.Header.Get("webhook-id")
	mu.Lock()
	defer mu.Unlock()
	if !seen[id] {
		select {
		case work <- delivery{id, raw}:
			seen[id] = true
		default: // the queue is full: not taken, so hangar tries it again later
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
	}
	// At once: an answer later than 10 s is a failed attempt, and hangar sends it again.
	w.WriteHeader(http.StatusNoContent)
}

func handle(d delivery) error {
	// Your work goes here, after the answer has gone.
	var envelope struct {
		Event string          `json:"event"`
		Data  json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(d.body, &envelope); err != nil {
		return err
	}
	fmt.Println(d.id, envelope.Event, string(envelope.Data))
	return nil
}

func main() {
	if len(secret) == 0 {
		log.Fatal("WEBHOOK_SECRET is not set")
	}
	go func() {
		for d := range work {
			if err := handle(d); err != nil {
				log.Print(err) // one bad delivery must not stop the ones after it
			}
		}
	}()
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	http.HandleFunc("/", receive)
	log.Fatal(http.ListenAndServe("127.0.0.1:"+port, nil))
}
