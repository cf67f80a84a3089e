"""Words the seed data is made of: aircraft, names, and the texts of a flight school's records."""

from __future__ import annotations

# (type as the registry spells it, what the line calls it, relative share of a training fleet)
AIRCRAFT_TYPES: tuple[tuple[str, str, int], ...] = (
    ("Cessna 172S", "Skyhawk", 30),
    ("Cessna 172N", "Skyhawk", 10),
    ("Cessna 172R", "Skyhawk", 8),
    ("Cessna 152", "152", 12),
    ("Piper PA-28-181", "Archer", 12),
    ("Piper PA-28-161", "Warrior", 10),
    ("Diamond DA40", "Diamond Star", 6),
    ("Diamond DA20-C1", "Eclipse", 4),
    ("Cirrus SR20", "SR20", 5),
    ("Piper PA-44-180", "Seminole", 4),
    ("Cessna 182T", "Skylane", 3),
    ("Beechcraft A36", "Bonanza", 2),
)

# N-numbers never use I or O: they read as 1 and 0.
TAIL_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"

FIRST_NAMES = (
    "James", "Mary", "Robert", "Patricia", "John", "Jennifer", "Michael", "Linda", "David",
    "Elizabeth", "William", "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas",
    "Sarah", "Christopher", "Karen", "Charles", "Lisa", "Daniel", "Nancy", "Matthew", "Betty",
    "Anthony", "Sandra", "Mark", "Margaret", "Steven", "Ashley", "Paul", "Kimberly", "Andrew",
    "Emily", "Joshua", "Donna", "Kenneth", "Michelle", "Kevin", "Carol", "Brian", "Amanda",
    "George", "Melissa", "Timothy", "Deborah", "Ronald", "Stephanie", "Jason", "Rebecca",
    "Edward", "Laura", "Jeffrey", "Helen", "Ryan", "Sharon", "Jacob", "Cynthia", "Gary",
    "Kathleen", "Nicholas", "Amy", "Eric", "Angela", "Jonathan", "Shirley", "Larry", "Emma",
    "Justin", "Brenda", "Scott", "Pamela", "Brandon", "Nicole", "Benjamin", "Anna", "Samuel",
    "Samantha", "Gregory", "Katherine", "Alexander", "Christine", "Patrick", "Debra", "Frank",
    "Rachel", "Raymond", "Carolyn", "Jack", "Janet", "Dennis", "Maria", "Jerry", "Olivia",
    "Tyler", "Heather", "Aaron", "Diane", "Jose", "Julie", "Adam", "Joyce", "Nathan", "Victoria",
    "Priya", "Wei", "Hiroshi", "Aisha", "Carlos", "Sofia", "Mateo", "Fatima", "Noah", "Lucia",
)  # fmt: skip

LAST_NAMES = (
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez",
    "Martinez", "Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor",
    "Moore", "Jackson", "Martin", "Lee", "Perez", "Thompson", "White", "Harris", "Sanchez",
    "Clark", "Ramirez", "Lewis", "Robinson", "Walker", "Young", "Allen", "King", "Wright",
    "Scott", "Torres", "Nguyen", "Hill", "Flores", "Green", "Adams", "Nelson", "Baker", "Hall",
    "Rivera", "Campbell", "Mitchell", "Carter", "Roberts", "Gomez", "Phillips", "Evans",
    "Turner", "Diaz", "Parker", "Cruz", "Edwards", "Collins", "Reyes", "Stewart", "Morris",
    "Morales", "Murphy", "Cook", "Rogers", "Gutierrez", "Ortiz", "Morgan", "Cooper", "Peterson",
    "Bailey", "Reed", "Kelly", "Howard", "Ramos", "Kim", "Cox", "Ward", "Richardson", "Watson",
    "Brooks", "Chavez", "Wood", "James", "Bennett", "Gray", "Mendoza", "Ruiz", "Hughes", "Price",
    "Alvarez", "Castillo", "Sanders", "Patel", "Myers", "Long", "Ross", "Foster", "Jimenez",
    "O'Brien", "Van der Berg", "Okafor", "Kowalski", "Yamamoto", "Singh", "Nakamura", "Schmidt",
)  # fmt: skip

# Reserved for documentation (RFC 2606): seeded people can never receive real mail.
EMAIL_DOMAINS = ("example.com", "example.org", "example.net")

# Area codes of regions with many flight schools; 555-0100..0199 is reserved for fiction.
AREA_CODES = ("303", "480", "602", "407", "386", "512", "214", "972", "619", "858", "206", "425")

CANCELLATION_REASONS = (
    "Weather below VFR minimums",
    "Crosswind beyond student limits",
    "Student sick",
    "Instructor unavailable",
    "Aircraft down for maintenance",
    "Schedule conflict",
    "Rescheduled by student",
    "Low ceilings forecast",
    "Thunderstorms in the area",
    "TFR over the practice area",
)

SQUAWKS = (
    "Left main tire worn to the cords on the outboard edge",
    "Right main tire low on pressure, holds for about a day",
    "Nose strut extension low, bottoms out on taxi over bumps",
    "COM2 static on transmit, receive is fine",
    "Intercom squeal in the right seat headset jack",
    "Oil seeping at the #3 rocker cover gasket",
    "Oil on the belly aft of the firewall after flight",
    "Left fuel gauge reads empty with full tanks",
    "Fuel cap gasket cracked on the right tank",
    "Landing light inoperative",
    "Left wingtip nav light inoperative",
    "Beacon intermittent",
    "Stall warning horn does not sound during stall practice",
    "Cabin door does not latch on the first try",
    "Pilot seat slips one notch on the rail under braking",
    "Seat belt retractor on the right seat sticks",
    "Rough mag check: 175 RPM drop on the left mag",
    "Engine runs rough at idle after landing",
    "Alternator light flickers at low RPM",
    "Ammeter shows discharge with all lights on",
    "Heading indicator precesses about 10 degrees in 15 minutes",
    "Attitude indicator slow to erect, tumbles in steep turns",
    "Vacuum gauge reads 3.5 in Hg at cruise",
    "Transponder intermittent: ATC reports no Mode C",
    "GPS database out of date",
    "Pitot heat inoperative",
    "Cabin heat control cable stiff",
    "Flap indicator does not match flap position at 30 degrees",
    "Trim wheel hard to move past takeoff setting",
    "Brakes soft on the left pedal, pumps up",
    "Shimmy on the nose wheel during landing rollout",
    "Crack in the lower cowling near the left air inlet",
    "Windshield crazing on the pilot side",
    "ELT annunciator light stays on after test",
    "Carbon monoxide detector spot turned dark",
    "Hobbs meter not advancing",
    "Tachometer needle bounces at 2300 RPM",
    "Bird strike on the left wing leading edge, small dent",
)

RESOLUTIONS = (
    "Replaced",
    "Adjusted and operationally checked",
    "Repaired, ops check good",
    "Could not duplicate on ground run",
    "Serviced and leak-checked",
)

MECHANIC_NAMES = (
    "Dale Kowalski", "Rita Hernandez", "Gus Peterson", "Marcus Webb", "Sue Tanaka",
    "Earl Dawson", "Lena Fischer", "Tom Brandt",
)  # fmt: skip

WORK_ORDER_TITLES: tuple[tuple[str, str], ...] = (
    ("100-hour inspection", "inspection"),
    ("Annual inspection", "inspection"),
    ("Oil and filter change", "preventive"),
    ("Replace left main tire and tube", "repair"),
    ("Replace right main brake linings", "repair"),
    ("Troubleshoot intermittent COM2", "repair"),
    ("Replace landing light", "repair"),
    ("Overhaul vacuum pump", "repair"),
    ("Replace vacuum pump", "repair"),
    ("Repair lower cowling crack", "repair"),
    ("Comply with AD 87-20-03R2 seat rail inspection", "ad_compliance"),
    ("Comply with AD 2020-26-16 wing spar inspection", "ad_compliance"),
    ("Transponder and altimeter check (91.411/91.413)", "inspection"),
    ("ELT battery replacement", "preventive"),
    ("Install ADS-B Out", "alteration"),
    ("Install USB charging port", "alteration"),
    ("Update GPS navigation database", "preventive"),
    ("Rig flaps", "repair"),
    ("Top overhaul cylinder #2", "repair"),
    ("Replace cracked windshield", "repair"),
)

OIL_CHANGE_STEPS = (
    "Drained engine oil and removed the oil filter.",
    "Cut the oil filter and inspected the element: no metal found.",
    "Cut the oil filter and inspected the element: trace of non-ferrous particles, within limits.",
    "Installed new oil filter, torqued to 20 ft-lb and safety-wired.",
    "Serviced engine with 7 qt Aeroshell W100 Plus.",
    "Serviced engine with 8 qt Phillips X/C 20W-50.",
    "Cleaned the oil suction screen: clean.",
    "Took an oil sample for laboratory analysis.",
    "Ran the engine and checked for leaks: none found.",
)

INSPECTION_STEPS = (
    "Removed inspection panels, cowling and interior panels as required for access.",
    "Inspected the fuselage skin, bulkheads and stringers for corrosion, cracks and loose rivets.",
    "Inspected cabin doors, windows and latches; lubricated door hinges.",
    "Inspected seats, seat rails, stops and seat belts for condition and security.",
    "Inspected the flight controls through full travel for freedom of movement, proper "
    "direction and cable tension; tensions within limits.",
    "Inspected control cables, pulleys and turnbuckles for fraying, wear and safetying.",
    "Inspected wing attach points, struts and fittings; no cracks or corrosion found.",
    "Inspected ailerons, flaps, elevator and rudder hinges and attach bolts for wear.",
    "Inspected trim tab and trim actuator; free play within limits.",
    "Inspected fuel tanks, lines and selector valve for leaks; sumped all drains, no water.",
    "Cleaned the fuel strainer bowl and screen; reinstalled and safety-wired.",
    "Inspected landing gear, wheels and tires; serviced nose strut to proper extension.",
    "Inspected brake discs and linings; linings within limits; bled the brakes.",
    "Repacked the wheel bearings with Aeroshell 5 grease.",
    "Inspected engine mount, exhaust system and muffler for cracks; none found.",
    "Removed the heat muff shroud and inspected the muffler for cracks and carbon monoxide "
    "leaks; none found.",
    "Inspected the induction system and air filter; replaced the air filter.",
    "Inspected ignition harness and spark plugs; cleaned, gapped and rotated the plugs.",
    "Checked magneto timing: 25 degrees BTDC on both magnetos.",
    "Performed a differential compression test: #1 74/80, #2 76/80, #3 72/80, #4 75/80.",
    "Inspected the alternator belt for tension and wear; adjusted tension.",
    "Inspected the battery box and terminals; cleaned corrosion and serviced the battery.",
    "Inspected electrical wiring, circuit breakers and switches for security and chafing.",
    "Inspected the vacuum system, filters and lines; replaced the central air filter.",
    "Inspected the pitot-static system; performed a leak check.",
    "Checked the ELT for operation and battery expiration date.",
    "Checked the compass deviation card and placards for legibility.",
    "Checked airworthiness directives and service bulletins for compliance; see AD list.",
    "Lubricated the aircraft per the manufacturer's lubrication chart.",
    "Performed an engine run-up: static RPM, magneto drop, idle mixture and oil pressure "
    "within limits.",
    "Reinstalled all panels, cowling and interior; checked for tools and foreign objects.",
    "Updated the equipment list and weight and balance: no change.",
)

AD_STEPS = (
    "Complied with AD 87-20-03R2 (seat rails and stops): inspected seat rail holes for "
    "elongation and the stops for security; within limits. Next due in 100 hours.",
    "Complied with AD 2020-26-16 (lower wing spar): performed eddy-current inspection of the "
    "lower spar cap bolt holes; no cracks found.",
    "Complied with AD 2011-10-09 (carburetor airbox): inspected airbox and alternate air door "
    "for cracks and security; no defects found. Recurring every 100 hours.",
    "Reviewed the recurring airworthiness directives for the airframe, engine, propeller and "
    "appliances: all in compliance; next due times entered in the AD status record.",
    "Researched a new emergency AD against the installed equipment by serial number: not "
    "applicable to this aircraft.",
)

OTHER_STEPS = (
    "Installed a new ELT battery; next replacement due in 6 years.",
    "Replaced the landing light lamp; operationally checked.",
    "Performed the transponder check per 14 CFR 91.413 and the altimeter and static system "
    "check per 91.411; both within limits.",
    "Updated the GPS navigation database to the current cycle.",
    "Replaced the left main tire and tube; balanced and torqued the axle nut.",
    "Rigged the flaps to the manufacturer's specifications; ops check good.",
    "Replaced the vacuum pump; checked suction at 5.0 in Hg at 2000 RPM.",
    "Repaired a cracked lower cowling with a doubler per AC 43.13-1B.",
    "Washed and waxed the aircraft; treated corrosion on the belly skin.",
)

IA_SIGN_OFF = (
    "I certify that this aircraft has been inspected in accordance with an annual inspection "
    "and was determined to be in airworthy condition."
)
IA_SIGN_OFF_DISCREPANCIES = (
    "I certify that this aircraft has been inspected in accordance with an annual inspection "
    "and a list of discrepancies and unairworthy items dated {date} has been provided for the "
    "aircraft owner or operator."
)
