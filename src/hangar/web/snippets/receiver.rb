# A webhook receiver: checks the signature, drops repeats, answers at once, works after.
# Run:  WEBHOOK_SECRET=<your secret> PORT=8080 ruby receiver.rb
# Serve it behind TLS: webhooks are only ever sent to https:// URLs. Ruby's standard library
# has had no HTTP server since 3.0, so this one reads the request itself. In Rails or Sinatra,
# keep authentic? and the repeat check, with the body from request.raw_post (or body.read).
require "json"
require "openssl"
require "socket"

SECRET = ENV.fetch("WEBHOOK_SECRET")
WORK = Queue.new
SEEN = {} # in production: a unique key on the delivery id where you keep work

def signed_with_secret?(raw_body, signature)
  # Hash the bytes exactly as received, before any JSON parsing.
  expected = "sha256=" + OpenSSL::HMAC.hexdigest("SHA256", SECRET, raw_body)
  # secure_compare takes the same time wherever the two values differ.
  !signature.nil? && OpenSSL.secure_compare(expected, signature)
end

def authentic?(raw_body, headers)
  # While a secret is rotated, X-Service-Signature is made with the new secret and
  # X-Service-Signature-Previous with the old one: either one matching yours is enough, so
  # you can switch WEBHOOK_SECRET to the new secret at any time during the grace period.
  signed_with_secret?(raw_body, headers["x-service-signature"]) ||
    signed_with_secret?(raw_body, headers["x-service-signature-previous"])
end

def handle(delivery_id, envelope)
  # Your work goes here, after the answer has gone.
  puts "#{delivery_id} #{envelope["event"]} #{JSON.generate(envelope["data"])}"
end

def read_request(client)
  method = client.gets("\r\n").to_s.split(" ").first
  headers = {}
  while (line = client.gets("\r\n")) && line != "\r\n"
    name, value = line.split(":", 2)
    headers[name.strip.downcase] = value.to_s.strip
  end
  [method, headers, client.read(Integer(headers.fetch("content-length", "0"), 10)).to_s]
end

STATUS = { 204 => "204 No Content", 401 => "401 Unauthorized\r\nContent-Length: 0" }.freeze

$stdout.sync = true
Thread.new do
  loop do
    delivery_id, raw = WORK.pop
    begin
      handle(delivery_id, JSON.parse(raw))
    rescue StandardError => e # one bad delivery must not stop the ones after it
      warn e.full_message
    end
  end
end

server = TCPServer.new("127.0.0.1", Integer(ENV.fetch("PORT", "8080"), 10))
loop do
  client = server.accept
  begin
    method, headers, raw = read_request(client)
    if method != "POST" || !authentic?(raw, headers)
      status = 401
    else
      # The same delivery can come again (a retry after a timeout, a Redeliver): answer it
      # with a 2xx, so that hangar stops sending it, but handle it only once.
      delivery_id = headers.fetch("x-service-delivery", "")
      WORK << [delivery_id, raw] unless SEEN.key?(delivery_id)
      SEEN[delivery_id] = true
      # At once: an answer later than 10 s is a failed attempt, and hangar sends it again.
      status = 204
    end
    client.write("HTTP/1.1 #{STATUS.fetch(status)}\r\nConnection: close\r\n\r\n")
  rescue StandardError => e # a malformed request: drop the connection, keep serving
    warn e.message
  ensure
    client.close
  end
end
