"""Class vocabularies the config check knows without data: the synthetic demo's (drawn by
biastransfer.data.synthetic): two figure groups, four objects, their pairs and ``random``; and COCO 2017's
80 categories and Open Images V4's 601 boxable classes (the classes of a COCO or Open Images split, which an
intervention on that dataset names); and which kinds an intervention takes, with their vocabularies."""

SYNTHETIC_GROUPS = ("person_a", "person_b")
SYNTHETIC_OBJECTS = ("car", "surfboard", "refrigerator", "stop_sign")
SYNTHETIC_CLASSES = (
    *SYNTHETIC_GROUPS,
    *SYNTHETIC_OBJECTS,
    *(f"{o}_{g}" for o in SYNTHETIC_OBJECTS for g in SYNTHETIC_GROUPS),
    "random",
)

#: COCO 2017's 80 categories (id, name) in id order (cocodataset.org "format-data"; instances_*.json).
COCO_CATEGORIES = [
    (1, "person"),
    (2, "bicycle"),
    (3, "car"),
    (4, "motorcycle"),
    (5, "airplane"),
    (6, "bus"),
    (7, "train"),
    (8, "truck"),
    (9, "boat"),
    (10, "traffic light"),
    (11, "fire hydrant"),
    (13, "stop sign"),
    (14, "parking meter"),
    (15, "bench"),
    (16, "bird"),
    (17, "cat"),
    (18, "dog"),
    (19, "horse"),
    (20, "sheep"),
    (21, "cow"),
    (22, "elephant"),
    (23, "bear"),
    (24, "zebra"),
    (25, "giraffe"),
    (27, "backpack"),
    (28, "umbrella"),
    (31, "handbag"),
    (32, "tie"),
    (33, "suitcase"),
    (34, "frisbee"),
    (35, "skis"),
    (36, "snowboard"),
    (37, "sports ball"),
    (38, "kite"),
    (39, "baseball bat"),
    (40, "baseball glove"),
    (41, "skateboard"),
    (42, "surfboard"),
    (43, "tennis racket"),
    (44, "bottle"),
    (46, "wine glass"),
    (47, "cup"),
    (48, "fork"),
    (49, "knife"),
    (50, "spoon"),
    (51, "bowl"),
    (52, "banana"),
    (53, "apple"),
    (54, "sandwich"),
    (55, "orange"),
    (56, "broccoli"),
    (57, "carrot"),
    (58, "hot dog"),
    (59, "pizza"),
    (60, "donut"),
    (61, "cake"),
    (62, "chair"),
    (63, "couch"),
    (64, "potted plant"),
    (65, "bed"),
    (67, "dining table"),
    (70, "toilet"),
    (72, "tv"),
    (73, "laptop"),
    (74, "mouse"),
    (75, "remote"),
    (76, "keyboard"),
    (77, "cell phone"),
    (78, "microwave"),
    (79, "oven"),
    (80, "toaster"),
    (81, "sink"),
    (82, "refrigerator"),
    (84, "book"),
    (85, "clock"),
    (86, "vase"),
    (87, "scissors"),
    (88, "teddy bear"),
    (89, "hair drier"),
    (90, "toothbrush"),
]
COCO_CLASSES = tuple(name for _, name in COCO_CATEGORIES)

#: Open Images V4's 601 boxable classes (display names, in file order): the second column of
#: class-descriptions-boxable.csv (storage.googleapis.com/openimages/2018_04/; the V5 copy has MD5
#: 9846fd22fd2e68b45e3f3810a4c2a32a), as in the public copies of enjoy82/pytorch-ssd and
#: jaza10/google-object-detection, which agree.
OPENIMAGES_CLASSES = tuple(
    (
        "Tortoise; Container; Magpie; Sea turtle; Football; Ambulance; Ladder; Toothbrush; Syringe; Sink; Toy; "
        "Organ; Cassette deck; Apple; Human eye; Cosmetics; Paddle; Snowman; Beer; Chopsticks; Human beard; Bird; "
        "Parking meter; Traffic light; Croissant; Cucumber; Radish; Towel; Doll; Skull; Washing machine; Glove; "
        "Tick; Belt; Sunglasses; Banjo; Cart; Ball; Backpack; Bicycle; Home appliance; Centipede; Boat; Surfboard; "
        "Boot; Headphones; Hot dog; Shorts; Fast food; Bus; Boy; Screwdriver; Bicycle wheel; Barge; Laptop; "
        "Miniskirt; Drill; Dress; Bear; Waffle; Pancake; Brown bear; Woodpecker; Blue jay; Pretzel; Bagel; Tower; "
        "Teapot; Person; Bow and arrow; Swimwear; Beehive; Brassiere; Bee; Bat; Starfish; Popcorn; Burrito; "
        "Chainsaw; Balloon; Wrench; Tent; Vehicle registration plate; Lantern; Toaster; Flashlight; Billboard; "
        "Tiara; Limousine; Necklace; Carnivore; Scissors; Stairs; Computer keyboard; Printer; Traffic sign; Chair; "
        "Shirt; Poster; Cheese; Sock; Fire hydrant; Land vehicle; Earrings; Tie; Watercraft; Cabinetry; Suitcase; "
        "Muffin; Bidet; Snack; Snowmobile; Clock; Medical equipment; Cattle; Cello; Jet ski; Camel; Coat; Suit; "
        "Desk; Cat; Bronze sculpture; Juice; Gondola; Beetle; Cannon; Computer mouse; Cookie; Office building; "
        "Fountain; Coin; Calculator; Cocktail; Computer monitor; Box; Stapler; Christmas tree; Cowboy hat; "
        "Hiking equipment; Studio couch; Drum; Dessert; Wine rack; Drink; Zucchini; Ladle; Human mouth; Dairy; Dice; "
        "Oven; Dinosaur; Ratchet; Couch; Cricket ball; Winter melon; Spatula; Whiteboard; Pencil sharpener; Door; "
        "Hat; Shower; Eraser; Fedora; Guacamole; Dagger; Scarf; Dolphin; Sombrero; Tin can; Mug; Tap; Harbor seal; "
        "Stretcher; Can opener; Goggles; Human body; Roller skates; Coffee cup; Cutting board; Blender; "
        "Plumbing fixture; Stop sign; Office supplies; Volleyball; Vase; Slow cooker; Wardrobe; Coffee; Whisk; "
        "Paper towel; Personal care; Food; Sun hat; Tree house; Flying disc; Skirt; Gas stove; "
        "Salt and pepper shakers; Mechanical fan; Face powder; Fax; Fruit; French fries; Nightstand; Barrel; Kite; "
        "Tart; Treadmill; Fox; Flag; Horn; Window blind; Human foot; Golf cart; Jacket; Egg; Street light; Guitar; "
        "Pillow; Human leg; Isopod; Grape; Human ear; Power plugs and sockets; Panda; Giraffe; Woman; Door handle; "
        "Rhinoceros; Bathtub; Goldfish; Houseplant; Goat; Baseball bat; Baseball glove; Mixing bowl; "
        "Marine invertebrates; Kitchen utensil; Light switch; House; Horse; Stationary bicycle; Hammer; Ceiling fan; "
        "Sofa bed; Adhesive tape; Harp; Sandal; Bicycle helmet; Saucer; Harpsichord; Human hair; Heater; Harmonica; "
        "Hamster; Curtain; Bed; Kettle; Fireplace; Scale; Drinking straw; Insect; Hair dryer; Kitchenware; "
        "Indoor rower; Invertebrate; Food processor; Bookcase; Refrigerator; Wood-burning stove; Punching bag; "
        "Common fig; Cocktail shaker; Jaguar; Golf ball; Fashion accessory; Alarm clock; Filing cabinet; Artichoke; "
        "Table; Tableware; Kangaroo; Koala; Knife; Bottle; Bottle opener; Lynx; Lavender; Lighthouse; Dumbbell; "
        "Human head; Bowl; Humidifier; Porch; Lizard; Billiard table; Mammal; Mouse; Motorcycle; Musical instrument; "
        "Swim cap; Frying pan; Snowplow; Bathroom cabinet; Missile; Bust; Man; Waffle iron; Milk; Ring binder; "
        "Plate; Mobile phone; Baked goods; Mushroom; Crutch; Pitcher; Mirror; Lifejacket; Table tennis racket; "
        "Pencil case; Musical keyboard; Scoreboard; Briefcase; Kitchen knife; Nail; Tennis ball; Plastic bag; Oboe; "
        "Chest of drawers; Ostrich; Piano; Girl; Plant; Potato; Hair spray; Sports equipment; Pasta; Penguin; "
        "Pumpkin; Pear; Infant bed; Polar bear; Mixer; Cupboard; Jacuzzi; Pizza; Digital clock; Pig; Reptile; Rifle; "
        "Lipstick; Skateboard; Raven; High heels; Red panda; Rose; Rabbit; Sculpture; Saxophone; Shotgun; Seafood; "
        "Submarine sandwich; Snowboard; Sword; Picture frame; Sushi; Loveseat; Ski; Squirrel; Tripod; Stethoscope; "
        "Submarine; Scorpion; Segway; Training bench; Snake; Coffee table; Skyscraper; Sheep; Television; Trombone; "
        "Tea; Tank; Taco; Telephone; Torch; Tiger; Strawberry; Trumpet; Tree; Tomato; Train; Tool; Picnic basket; "
        "Cooking spray; Trousers; Bowling equipment; Football helmet; Truck; Measuring cup; Coffeemaker; Violin; "
        "Vehicle; Handbag; Paper cutter; Wine; Weapon; Wheel; Worm; Wok; Whale; Zebra; Auto part; Jug; Pizza cutter; "
        "Cream; Monkey; Lion; Bread; Platter; Chicken; Eagle; Helicopter; Owl; Duck; Turtle; Hippopotamus; "
        "Crocodile; Toilet; Toilet paper; Squid; Clothing; Footwear; Lemon; Spider; Deer; Frog; Banana; Rocket; "
        "Wine glass; Countertop; Tablet computer; Waste container; Swimming pool; Dog; Book; Elephant; Shark; "
        "Candle; Leopard; Axe; Hand dryer; Soap dispenser; Porcupine; Flower; Canary; Cheetah; Palm tree; Hamburger; "
        "Maple; Building; Fish; Lobster; Asparagus; Furniture; Hedgehog; Airplane; Spoon; Otter; Bull; Oyster; "
        "Horizontal bar; Convenience store; Bomb; Bench; Ice cream; Caterpillar; Butterfly; Parachute; Orange; "
        "Antelope; Beaker; Moths and butterflies; Window; Closet; Castle; Jellyfish; Goose; Mule; Swan; Peach; "
        "Coconut; Seat belt; Raccoon; Chisel; Fork; Lamp; Camera; Squash; Racket; Human face; Human arm; Vegetable; "
        "Diaper; Unicycle; Falcon; Chime; Snail; Shellfish; Cabbage; Carrot; Mango; Jeans; Flowerpot; Pineapple; "
        "Drawer; Stool; Envelope; Cake; Dragonfly; Sunflower; Microwave oven; Honeycomb; Marine mammal; Sea lion; "
        "Ladybug; Shelf; Watch; Candy; Salad; Parrot; Handgun; Sparrow; Van; Grinder; Spice rack; Light bulb; "
        "Corded phone; Sports uniform; Tennis racket; Wall clock; Serving tray; Kitchen & dining room table; "
        "Dog bed; Cake stand; Cat furniture; Bathroom accessory; Facial tissue holder; Pressure cooker; "
        "Kitchen appliance; Tire; Ruler; Luggage and bags; Microphone; Broccoli; Umbrella; Pastry; Grapefruit; "
        "Band-aid; Animal; Bell pepper; Turkey; Lily; Pomegranate; Doughnut; Glasses; Human nose; Pen; Ant; Car; "
        "Aircraft; Human hand; Skunk; Teddy bear; Watermelon; Cantaloupe; Dishwasher; Flute; Balance beam; Sandwich; "
        "Shrimp; Sewing machine; Binoculars; Rays and skates; Ipod; Accordion; Willow; Crab; Crown; Seahorse; "
        "Perfume; Alpaca; Taxi; Canoe; Remote control; Wheelchair; Rugby ball; Armadillo; Maracas; Helmet"
    ).split("; ")
)

#: Dataset kinds whose training split has a per-image attribute file, so that an intervention can take them,
#: and the classes its objects are drawn from, for biastransfer.workflow.config.intervention_problems (None: a
#: table's own, biastransfer.data.user.intervention_classes).
INTERVENABLE = {
    "synthetic": ("objects of the synthetic scenes", SYNTHETIC_OBJECTS),
    "coco": ("COCO categories", COCO_CLASSES),
    "openimages": ("Open Images V4 boxable classes (display names)", OPENIMAGES_CLASSES),
    "table": ("classes of the table", None),
}


#: Finetuning methods (biastransfer.train.methods): plain, then a mitigation arm's (datasets of kind mitigation).
TRAINING_METHODS = ("plain", "group_dro", "domain_independent", "adversarial", "dfr", "leace")
#: The methods that refit a finetuned network's last layer instead of training over epochs.
HEAD_ONLY_METHODS = ("dfr", "leace")
#: How a finetuning keeps its epoch: the validation mAP, or the worst-group validation mAP.
SELECTIONS = ("map", "worst_group")
