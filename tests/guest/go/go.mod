module armada.test/guestgo

go 1.18
