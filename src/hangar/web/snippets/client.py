from hangar_client import Client, calendar_url

BASE, KEY = "http://127.0.0.1:8000", "svc_pk_..."  # the key from Org Settings or ./dev demo
with Client(BASE, KEY) as hangar:
    for reservation in hangar.reservations(status="confirmed"):  # follows next_cursor
        print(reservation.id, reservation.start_time, reservation.aircraft_id)
    grounded = [plane.tail_number for plane in hangar.aircraft() if not plane.is_active]
    print("grounded:", grounded, "open squawks:", len(hangar.squawks(status="open")))
print("subscribe:", calendar_url(BASE, KEY))
